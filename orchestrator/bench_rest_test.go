package orchestrator

import (
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// setRestAfter sets the RestAfter of a benchmark's orchestrator: 1 s if
// rest, never otherwise.
func setRestAfter(c *Config, rest bool) {
	c.RestAfter = -1
	if rest {
		c.RestAfter = time.Second
	}
}

// waitResting waits until the mirror of every node in ids rests (setup
// only, not timed).
func waitResting(b *testing.B, o *Orchestrator, ids ...string) {
	b.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for _, id := range ids {
		n := o.node(id)
		if !testenv.Until(time.Until(deadline), n.Scr.Asleep) {
			b.Fatalf("node %s never rested", id)
		}
	}
}
