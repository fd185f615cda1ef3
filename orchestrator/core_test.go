package orchestrator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

func TestLaunchSubmitWait(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, bashArgv()...)
	ctx := tctx(t)
	r, err := o.Submit(ctx, id, "echo hello-$((6*7))", &tools.WaitSpec{Wait: tools.WaitText, Text: "hello-42", TimeoutMS: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if r.Wait == nil || !r.Wait.Matched {
		snap, _ := o.Snapshot(context.Background(), id)
		t.Fatalf("wait = %+v\n%s", r.Wait, strings.Join(snap.Lines, "\n"))
	}
	snap, err := o.Snapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range snap.Lines {
		if l == "hello-42" {
			found = true
		}
	}
	if !found || snap.Columns != 80 || snap.Rows != 24 || snap.Status != tools.StatusRunning {
		t.Fatalf("snapshot = %+v", snap)
	}
}

// TestWaitIgnoresEcho: the echo of the typed command contains READY, but
// only the output a second later may satisfy the wait.
func TestWaitIgnoresEcho(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, bashArgv()...)
	ctx := tctx(t)
	waitQuiet(t, o, id)
	start := time.Now()
	r, err := o.Submit(ctx, id, "sleep 1; echo READY", &tools.WaitSpec{Wait: tools.WaitText, Text: "READY", TimeoutMS: 10000})
	if err != nil || r.Wait == nil || !r.Wait.Matched {
		t.Fatalf("submit: %+v %v", r, err)
	}
	if el := time.Since(start); el < 900*time.Millisecond {
		t.Fatalf("wait returned after %v: it matched the echo of the input", el)
	}
}

func waitQuiet(t *testing.T, o *Orchestrator, id string) {
	t.Helper()
	if _, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitQuiet, QuietMS: 200, TimeoutMS: 10000}); err != nil {
		t.Fatal(err)
	}
}
