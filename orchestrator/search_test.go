package orchestrator

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// A search holds at most SearchConcurrency nodes' histories at once:
// the hook holds every capture that arrived until that many are held,
// and no other capture is even sent meanwhile. The matches still come
// in node order.
func TestSearchBoundsCaptures(t *testing.T) {
	o, _ := newTestOrchestrator(t)
	var ids []string
	for i := range 2*SearchConcurrency + 3 {
		id := launch(t, o, "sh", "-c", fmt.Sprintf("echo bound-marker-%02d; exec sleep 600", i))
		waitText(t, o, id, fmt.Sprintf("bound-marker-%02d", i))
		ids = append(ids, id)
	}
	var mu sync.Mutex // guards held, most
	held, most := 0, 0
	full := make(chan struct{})
	var fullOnce sync.Once
	testHookSearchCaptured = func(string) {
		mu.Lock()
		held++
		most = max(most, held)
		if held == SearchConcurrency {
			fullOnce.Do(func() { close(full) })
		}
		mu.Unlock()
		select {
		case <-full: // the window: every capture waits until the first SearchConcurrency are held
		case <-time.After(2 * time.Second): // fewer nodes left than the bound
		}
		mu.Lock()
		held--
		mu.Unlock()
	}
	t.Cleanup(func() { testHookSearchCaptured = nil })
	r, err := o.Search(t.Context(), SearchSpec{Pattern: "bound-marker-", Nodes: ids})
	if err != nil {
		t.Fatal(err)
	}
	if most != SearchConcurrency {
		t.Fatalf("%d captures held at once, want the bound %d", most, SearchConcurrency)
	}
	if len(r.Matches) != len(ids) || r.Truncated {
		t.Fatalf("matches %+v", r)
	}
	for i, m := range r.Matches {
		if m.Node != ids[i] || m.Text != fmt.Sprintf("bound-marker-%02d", i) {
			t.Fatalf("match %d: %+v, want node %s in order", i, m, ids[i])
		}
	}
	// The limit: the first nodes' matches, the cut said, no error.
	r, err = o.Search(t.Context(), SearchSpec{Pattern: "bound-marker-", Nodes: ids, Limit: 3})
	if err != nil || len(r.Matches) != 3 || !r.Truncated || r.Matches[2].Node != ids[2] {
		t.Fatalf("limit 3: %+v %v", r, err)
	}
}
