package toolserver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// The event stream's rows carry a node's worktree (branch, base) and,
// once read off the stream's path, its status: the dashboard's list and
// preview header come from it (CONTRACT §19, §21).
func TestWorktreeInTheEventStream(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 4 s on a loaded 2-core machine")
	t.Parallel()
	repo, _ := wtRepo(t)
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	info, _ := wtLaunch(t, op, repo, "streamed", apiM{"branch": "shown"})
	plain := apiLaunch(t, op, "cat")
	wtWrite(t, filepath.Join(filepath.Dir(repo), "my repo.worktrees", "shown", "new.txt"), "x\n")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := tools.Subscribe(ctx, op, "", tools.EventsOptions{Retry: 100 * time.Millisecond})
	defer ev.Close()
	rows := func(e tools.StreamEvent) []tools.StreamNode {
		switch {
		case e.Frame != nil:
			return e.Frame.State.Nodes
		case e.State != nil:
			return e.State.Nodes
		}
		return nil
	}
	nextEvent(t, ev, 30*time.Second, "the worktree row with its status", func(e tools.StreamEvent) bool {
		var got, other bool
		for _, n := range rows(e) {
			switch n.Terminal {
			case info.Terminal:
				got = n.Worktree != nil && n.Worktree.Branch == "termsprawl/shown" && n.Worktree.Base != "" && n.Worktree.Checked != "" && n.Worktree.Dirty
			case plain:
				other = n.Worktree == nil
			}
		}
		return got && other
	})
}
