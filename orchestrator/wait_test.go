package orchestrator

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/tools"
)

// Regex waits are multi-line: ^ and $ match at line boundaries, so
// ^(ok|FAIL) finds a line that starts with ok (CONTRACT §10).
func TestRegexWaitIsMultiLine(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, "sh", "-c", "echo compiling; echo 'ok  pkg 0.1s'; sleep 60")
	waitText(t, o, id, "compiling")
	after := uint64(0)
	r, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `^(ok|FAIL)`, After: &after, TimeoutMS: 10000})
	if err != nil || !r.Matched || r.Match != "ok" {
		t.Fatalf("multi-line regex: %+v %v", r, err)
	}
}

// A quiet wait matches one quiet period after the last change the mirror
// showed: output it applied does not start the quiet over when the timer
// runs out (before, a quiet wait took twice its time after the last
// change, and an Esc-interrupted Claude turn was seen to end after 10 s).
func TestQuietWaitCountsAppliedOutput(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, "cat")
	inLoop := make(chan struct{}, 1)
	var again atomic.Int64
	o.hooks.WaitLoop = func(*node.Node) {
		select {
		case inLoop <- struct{}{}:
		default:
		}
	}
	o.hooks.QuietAgain = func(*node.Node) { again.Add(1) }
	waited := make(chan tools.WaitResult, 1)
	go func() {
		r, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitQuiet, QuietMS: 300, TimeoutMS: 30000})
		if err != nil {
			t.Error(err)
		}
		waited <- r
	}()
	within(t, inLoop, 10*time.Second, "the wait entering its loop")
	if _, err := o.Type(tctx(t), id, "echoed-by-cat", nil); err != nil {
		t.Fatal(err)
	}
	r := within(t, waited, 20*time.Second, "the quiet wait")
	if !r.Matched {
		t.Fatalf("quiet wait: %+v", r)
	}
	if n := again.Load(); n != 0 {
		t.Fatalf("the quiet started over %d times for output the mirror had shown", n)
	}
}
