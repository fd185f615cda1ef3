package orchestrator

import (
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// terminal_list asks the shards for their human clients side by side:
// every shard's list-clients has started before any may go on (asked one
// after the other, the first would wait here for the others in vain).
func TestListAsksShardsSideBySide(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 8 s on a loaded 2-core machine")
	srv, dir := newTestServer(t)
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.ShardSize = 1 })
	for range 3 {
		launch(t, o, "sleep", "600")
	}
	var mu sync.Mutex
	started, shards := 0, 0
	all := make(chan struct{})
	late := false
	o.hooks.humanClients = func(n int) {
		mu.Lock()
		started, shards = started+1, n
		if started == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			mu.Lock()
			late = true
			mu.Unlock()
		}
	}
	if got := len(o.List(tctx(t))); got != 3 {
		t.Fatalf("listed %d nodes, want 3", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if shards < 3 || late {
		t.Errorf("%d shards asked, one waited for the others in vain: %v", shards, late)
	}
}
