package orchestrator

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/tools"
)

// Concurrent large screenshots share the memory budget (CONTRACT §31):
// four of a 200x50 screen at scale 4 (21.8 M pixels, about 70 MB each to
// draw) do not fit together: while the first draws (held by the hook
// until the others have answered), the other three are refused at once,
// unavailable and retryable with reason memory, instead of waiting.
// Afterwards the budget is empty and a screenshot draws again.
func TestScreenshotMemoryBudget(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 4 s on a loaded 2-core machine")
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	info, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"sleep", "600"}, Cwd: t.TempDir(), Columns: 200, Rows: 50})
	if err != nil {
		t.Fatal(err)
	}
	started, others := make(chan struct{}), make(chan struct{})
	var once sync.Once
	o.hooks.render = func(inFlight int64) {
		if inFlight > ScreenshotMemoryBudget {
			t.Errorf("%d bytes drawn at once, over the budget %d", inFlight, ScreenshotMemoryBudget)
		}
		once.Do(func() {
			close(started)
			<-others
		})
	}
	first := make(chan error, 1)
	go func() {
		_, _, err := o.Screenshot(context.Background(), info.Terminal, 4, "")
		first <- err
	}()
	// The first holds its share once the hook runs.
	select {
	case <-started:
	case err := <-first:
		t.Fatalf("the first screenshot ended before drawing: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Go(func() {
			_, _, err := o.Screenshot(context.Background(), info.Terminal, 4, "")
			errs <- err
		})
	}
	wg.Wait()
	close(others)
	close(errs)
	for err := range errs {
		var te *tools.Error
		if !errors.As(err, &te) || te.Kind != tools.KindUnavailable || !te.Retryable || te.Details["reason"] != "memory" {
			t.Fatalf("a screenshot past the budget: %#v (%v), want unavailable, retryable, reason memory", te, err)
		}
	}
	if err := <-first; err != nil && tools.KindOf(err) != tools.KindRejected {
		t.Fatal(err)
	}
	if n := o.renders.InUse(); n != 0 {
		t.Fatalf("%d bytes still held after every screenshot ended", n)
	}
	if _, _, err := o.Screenshot(context.Background(), info.Terminal, 1, ""); err != nil {
		t.Fatalf("a screenshot after the others: %v", err)
	}
}

// Ordinary screenshots draw side by side: a 120x40 screen at scale 1
// takes about 2 MB of the 128 MB budget.
func TestScreenshotRenderBytes(t *testing.T) {
	t.Parallel()
	small := render.DrawBytes(120*8*40*17, 120*40)
	if small > 4<<20 || ScreenshotMemoryBudget/small < 32 {
		t.Fatalf("a 120x40 screenshot counts %d bytes: fewer than 32 fit the budget", small)
	}
	if big := render.DrawBytes(1<<25, 200*77); big > ScreenshotMemoryBudget {
		t.Fatalf("the largest screenshot counts %d bytes, over the budget %d: it could never draw", big, ScreenshotMemoryBudget)
	}
}
