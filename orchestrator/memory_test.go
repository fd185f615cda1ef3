package orchestrator

import (
	"fmt"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// The meter returns memory once after enough output, and only once the
// output has calmed; a trickle never triggers it.
func TestOutputMeterFreesOnceCalm(t *testing.T) {
	frees := 0
	freeOSMemory = func() { frees++ }
	t.Cleanup(func() { freeOSMemory = nil })
	var m outputMeter
	m.quiet()
	if m.armed {
		t.Fatal("armed without output")
	}
	m.add(freeOSEvery)
	m.quiet()
	if !m.armed {
		t.Fatal("not armed after a flood")
	}
	m.timer.Stop() // fire by hand, deterministically
	m.quiet()      // armed already: nothing more
	m.add(freeOSCalm)
	m.fire() // still flowing: looks again later
	if frees != 0 || !m.armed {
		t.Fatalf("freed %d times while the output flowed (armed %v)", frees, m.armed)
	}
	m.timer.Stop()
	m.fire() // calm
	if frees != 1 || m.armed {
		t.Fatalf("after the flood calmed: freed %d times, armed %v", frees, m.armed)
	}
	m.add(freeOSEvery - 1)
	m.quiet()
	if m.armed {
		t.Error("armed again for less than freeOSEvery of output")
	}
	m.stop()
}

// A node's quiet after a flood reaches the meter: the pump trims and
// the heap is returned to the system.
func TestQuietNodeReturnsMemory(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 10 s on a loaded 2-core machine")
	freed := make(chan struct{}, 4)
	freeOSMemory = func() { freed <- struct{}{} }
	t.Cleanup(func() { freeOSMemory = nil })
	srv, dir := newTestServer(t)
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.RestAfter = 100 * time.Millisecond; c.IdleAfter = -1 })
	mb := 2 * freeOSEvery >> 20
	// Rounds of a flood, each followed by a quiet longer than
	// freeOSQuiet: on a loaded machine tmux may pause the pane (its
	// client more than 5 s behind) and drop output we never see, so one
	// round can bring less than freeOSEvery; the meter counts what
	// arrived, and the rounds add up until it is enough.
	launch(t, o, "sh", "-c", fmt.Sprintf(`for r in 1 2 3 4 5 6; do head -c %d /dev/zero | tr '\0' 'a' | fold -w 100; echo FLOOD-DONE; sleep 3; done; exec sleep 60`, mb<<20))
	select {
	case <-freed:
	case <-time.After(90 * time.Second):
		t.Fatalf("no return of memory after rounds of a %d MiB flood went quiet (output seen %d bytes)", mb, o.output.seen.Load())
	}
}
