package orchestrator

import (
	"context"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// Concurrent large screenshots share the pixel budget: four of a 200x50
// screen at scale 4 (21.8 M pixels, 87 MB of surface each) draw one at a
// time, never more than renderPixelBudget pixels in flight.
func TestScreenshotPixelBudget(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 4 s on a loaded 2-core machine")
	o, _ := newTestOrchestrator(t)
	info, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"sleep", "600"}, Cwd: t.TempDir(), Columns: 200, Rows: 50})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var peak int64
	renderHook = func(inFlight int64) {
		mu.Lock()
		peak = max(peak, inFlight)
		mu.Unlock()
	}
	defer func() { renderHook = nil }()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			if _, _, err := o.Screenshot(context.Background(), info.Terminal, 4, ""); err != nil && tools.KindOf(err) != tools.KindRejected {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	const one = 200 * 8 * 4 * 50 * 17 * 4
	if peak == 0 || peak > renderPixelBudget || peak > one {
		t.Fatalf("%d pixels drawn at once, want one screenshot's %d (budget %d)", peak, one, renderPixelBudget)
	}
}

// The budget's semaphore: what fits goes at once, more waits, anything
// fits alone.
func TestWeighted(t *testing.T) {
	t.Parallel()
	w := newWeighted(10)
	a := w.acquire(6)
	done := make(chan int64)
	go func() { done <- w.acquire(6) }()
	select {
	case <-done:
		t.Fatal("12 of 10 were held at once")
	default:
	}
	w.release(a)
	b := <-done
	if huge := w.acquire(0); huge != 1 || w.inUse() != 7 {
		t.Fatalf("acquire(0) held %d, in use %d", huge, w.inUse())
	}
	w.release(1)
	w.release(b)
	if got := w.acquire(1000); got != 10 {
		t.Fatalf("an oversized acquire held %d, want the whole budget", got)
	}
}
