package orchestrator

import (
	"fmt"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator/memtrim"
)

// A node's quiet after a flood reaches the meter: the pump trims and
// the heap is returned to the system.
func TestQuietNodeReturnsMemory(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 10 s on a loaded 2-core machine")
	t.Parallel()
	freed := make(chan struct{}, 4)
	srv, dir := newTestServer(t)
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.RestAfter = 100 * time.Millisecond; c.IdleAfter = -1 })
	o.output.FreeOS = func() { freed <- struct{}{} } // before any output: no pump runs yet
	mb := 2 * memtrim.FreeOSEvery >> 20
	// Rounds of a flood, each followed by a quiet longer than
	// memtrim.FreeOSQuiet: on a loaded machine tmux may pause the pane (its
	// client more than 5 s behind) and drop output we never see, so one
	// round can bring less than memtrim.FreeOSEvery; the meter counts what
	// arrived, and the rounds add up until it is enough.
	launch(t, o, "sh", "-c", fmt.Sprintf(`for r in 1 2 3 4 5 6; do head -c %d /dev/zero | tr '\0' 'a' | fold -w 100; echo FLOOD-DONE; sleep 3; done; exec sleep 60`, mb<<20))
	select {
	case <-freed:
	case <-time.After(90 * time.Second):
		t.Fatalf("no return of memory after rounds of a %d MiB flood went quiet (output seen %d bytes)", mb, o.output.Seen())
	}
}
