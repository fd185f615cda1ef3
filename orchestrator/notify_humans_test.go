package orchestrator_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator"
)

// A human attached to a node (a real tmux client, running in a pane of a
// second tmux server the test reads) sees the message on its status
// line, literally: `#` is not expanded as a format.
func TestNotifyHumans(t *testing.T) {
	t.Parallel()
	o, srv := orchestrator.NewTestOrchestrator(t)
	id := orchestrator.LaunchForTest(t, o, orchestrator.BashArgv()...)
	ctx := orchestrator.TestContext(t)
	if n, err := o.NotifyHumans(ctx, "nobody is attached"); n != 0 || err != nil {
		t.Fatalf("with no human attached: %d, %v", n, err)
	}
	outer := tmuxtest.New(t)
	outer.Must("new-session", "-d", "-s", "human", "-x", "120", "-y", "20",
		"env", "-u", "TMUX", "tmux", "-L", srv.Socket, "-f", os.DevNull, "attach-session", "-t", "=ts-"+id)
	if !testenv.Until(20*time.Second, func() bool {
		n, err := o.NotifyHumans(ctx, "termsprawl: build asks: Bash: make #{pane_id} (termsprawl answer dialog-1 allow|deny)")
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return true
		}
		return false
	}) {
		t.Fatal("the attached client was never told")
	}
	var pane string
	if !testenv.Until(20*time.Second, func() bool {
		pane, _ = outer.Cmd("capture-pane", "-p", "-t", "=human:")
		return strings.Contains(pane, "build asks: Bash: make #{pane_id} (termsprawl answer dialog-1 allow|deny)")
	}) {
		t.Fatalf("the human's screen lacks the message:\n%s", pane)
	}
}
