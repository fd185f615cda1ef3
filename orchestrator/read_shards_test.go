package orchestrator

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
)

// terminal_list asks the shards for their human clients side by side:
// every shard's list-clients has started before any may go on (asked one
// after the other, the first would wait here for the others in vain).
func TestListAsksShardsSideBySide(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 8 s on a loaded 2-core machine")
	t.Parallel()
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

// A shard's human clients are asked again only after its admin client
// heard of a client change: a list with nothing changed asks no shard,
// and an attach and a detach are each seen by a list that follows them.
func TestListClientsFollowTmux(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	id := launch(t, o, "sleep", "600")
	var mu sync.Mutex
	asked := 0
	o.hooks.humanClients = func(int) {
		mu.Lock()
		asked++
		mu.Unlock()
	}
	askedNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		return asked
	}
	clients := func() int {
		for _, r := range o.List(tctx(t)) {
			if r.Terminal == id {
				return r.Clients
			}
		}
		t.Fatalf("node %s not listed", id)
		return 0
	}
	if c := clients(); c != 0 {
		t.Fatalf("%d clients before any attached, want 0", c)
	}
	before := askedNow()
	if c := clients(); c != 0 || askedNow() != before {
		t.Fatalf("a second list with nothing changed: %d clients, asked %d more times, want 0 and 0", c, askedNow()-before)
	}
	outer := tmuxtest.New(t)
	outer.Must("new-session", "-d", "-s", "human", "-x", "100", "-y", "20",
		"env", "-u", "TMUX", "tmux", "-L", srv.Socket, "-f", os.DevNull, "attach-session", "-t", "=ts-"+id)
	if !testenv.Until(20*time.Second, func() bool { return clients() == 1 }) {
		t.Fatal("the attached human was never counted")
	}
	srv.Must("detach-client", "-s", "=ts-"+id)
	if !testenv.Until(20*time.Second, func() bool { return clients() == 0 }) {
		t.Fatal("the detached human is still counted")
	}
	before = askedNow()
	clients()
	if askedNow() != before {
		t.Fatal("a list after the change was seen asked tmux again with nothing changed")
	}
}
