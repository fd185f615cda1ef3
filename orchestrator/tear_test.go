package orchestrator

import (
	"context"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/tools"
)

// A node's status and exit reason are read in one step: the hook ends the
// node (markLost, as its tmux server's death does) right after a reader
// took its state, where the reader used to take the status and then, under
// a second lock, the reason. The answer is the state before the exit,
// whole (running, no reason); the next answer is the state after it, whole
// (exited, with the reason). Never running with a reason.
func TestStatusAndExitReasonNeverTear(t *testing.T) {
	t.Parallel()
	// No screen keeper: its rounds read every node's state too, and the
	// hook must end the node inside the test's own read.
	srv, dir := newTestServer(t)
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.KeepScreens = -1 })
	const why = "the test ended it"
	for _, read := range []struct {
		name string
		get  func(id string) (status, reason string)
	}{
		{"snapshot", func(id string) (string, string) {
			s, err := o.Snapshot(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			return s.Status, s.ExitReason
		}},
		{"list", func(id string) (string, string) {
			for _, i := range o.List(tctx(t)) {
				if i.Terminal == id {
					return i.Status, i.ExitReason
				}
			}
			t.Fatalf("%s not listed", id)
			return "", ""
		}},
	} {
		t.Run(read.name, func(t *testing.T) {
			id := launch(t, o, "sleep", "600")
			n := o.node(id)
			var once sync.Once
			o.hooks.StateRead = func(hn *node.Node) {
				if hn == n {
					once.Do(func() { n.MarkLost(why) })
				}
			}
			defer func() { o.hooks.StateRead = nil }()
			if status, reason := read.get(id); status != tools.StatusRunning || reason != "" {
				t.Fatalf("read across a concurrent exit: status %q, reason %q; want running and no reason (the state before it)", status, reason)
			}
			if status, reason := read.get(id); status != tools.StatusExited || reason != why {
				t.Fatalf("read after the exit: status %q, reason %q; want exited, %q", status, reason, why)
			}
		})
	}
}
