package orchestrator

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/tools"
)

// TestQuietNodeRests: an awake node whose output went quiet drops its
// emulator but keeps its screen; a screenshot gets the styled cells from
// tmux, and new output shows as before.
func TestQuietNodeRests(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	rested := make(chan *node.Node, 16)
	o := openOrchestratorWith(t, srv, dir, func(c *Config) {
		c.RestAfter = 100 * time.Millisecond
		c.IdleAfter = -1
		c.hooks = &hooks{Hooks: node.Hooks{Rested: func(n *node.Node) { rested <- n }}}
	})
	id := launch(t, o, "sh", "-c", `printf '\033[31mRED\033[0m plain\n'; read x; echo "after-$x"; sleep 60`)
	waitText(t, o, id, "RED plain")
	n := o.node(id)
	restedNode := func() {
		t.Helper()
		for {
			select {
			case rn := <-rested:
				if rn == n {
					return
				}
			case <-time.After(20 * time.Second):
				t.Fatal("a quiet node's mirror never rested")
			}
		}
	}
	restedNode()
	if !n.Scr.Asleep() || n.Asleep.Load() {
		t.Fatalf("resting: emulator released %v, node asleep %v", n.Scr.Asleep(), n.Asleep.Load())
	}
	snap, err := o.Snapshot(context.Background(), id)
	if err != nil || snap.Lines[0] != "RED plain" {
		t.Fatalf("snapshot of a resting node: %q %v", snap.Lines, err)
	}
	// A screenshot needs the styles: they come back from tmux, and since
	// nothing changed the revision stays (a render wait must not fire).
	before := n.Scr.Revision()
	g := n.Cells(tctx(t))
	if after := n.Scr.Revision(); after != before {
		t.Fatalf("reseeding a resting mirror that did not change moved the revision %d → %d", before, after)
	}
	if c := g.At(0, 0); c.Content != "R" || c.Fg != render.ANSI(1) {
		t.Fatalf("cell (0,0) of a resting node's screenshot: %+v, want a red R", c)
	}
	if n.Scr.Asleep() {
		t.Fatal("the screenshot left the mirror without its emulator")
	}
	restedNode()
	rev := n.Scr.Revision()
	if _, err := o.Submit(tctx(t), id, "x", nil); err != nil {
		t.Fatal(err)
	}
	r, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitText, Text: "after-x", After: &rev, TimeoutMS: 20000})
	if err != nil || !r.Matched {
		t.Fatalf("wait after a rest: %+v %v", r, err)
	}
	r, err = o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitRender, After: &rev, TimeoutMS: 20000})
	if err != nil || !r.Matched {
		t.Fatalf("render wait after a rest: %+v %v", r, err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		snap, err := o.Snapshot(context.Background(), id)
		if err == nil && len(snap.Lines) > 2 && snap.Lines[2] == "after-x" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror never showed the output after a rest: %q", snap.Lines)
		}
		<-n.Scr.Changed()
	}
}
