package orchestrator

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/proc"
	"github.com/termsprawl/termsprawl/tools"
)

func TestCompileWait(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		spec tools.WaitSpec
		ok   bool
	}{
		{tools.WaitSpec{Wait: tools.WaitText, Text: "x"}, true},
		{tools.WaitSpec{Wait: tools.WaitText}, false},
		{tools.WaitSpec{Wait: tools.WaitRegex, Pattern: "a+"}, true},
		{tools.WaitSpec{Wait: tools.WaitRegex, Pattern: "("}, false},
		{tools.WaitSpec{Wait: tools.WaitQuiet}, true},
		{tools.WaitSpec{Wait: "sometime"}, false},
		{tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 40001}, false},
		{tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 40000}, true},
	} {
		if _, err := node.CompileWait(tt.spec); (err == nil) != tt.ok {
			t.Errorf("compileWait(%+v) = %v, want ok=%v", tt.spec, err, tt.ok)
		}
	}
}

func TestParseSeed(t *testing.T) {
	t.Parallel()
	st, dead, code, pid, err := node.ParseSeed("80 24 10 3 1 1 1 010 1 0 23 4294967295 4294967295 1:7: 1234 my title here", proc.ZombieStatus)
	if err != nil {
		t.Fatal(err)
	}
	if st.Columns != 80 || st.Rows != 24 || st.CursorX != 10 || st.CursorY != 3 || !st.CursorVisible || !st.AltScreen ||
		!st.AppCursor || !st.Mouse || !st.MouseSGR || st.ScrollBottom != 23 || st.PrimaryCursorX != 0 ||
		!dead || code != 7 || pid != 1234 || st.Title != "my title here" {
		t.Fatalf("parseSeed = %+v dead=%v code=%d pid=%d", st, dead, code, pid)
	}
	if _, _, _, _, err := node.ParseSeed("80 24", proc.ZombieStatus); err == nil {
		t.Fatal("short line accepted")
	}
	if _, _, _, _, err := node.ParseSeed("x 24 10 3 1 1 1 010 1 0 23 0 0 0:: 1 t", proc.ZombieStatus); err == nil {
		t.Fatal("non-numeric width accepted")
	}
}

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
