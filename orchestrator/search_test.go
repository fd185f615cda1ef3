package orchestrator

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/fleetsearch"
	"github.com/termsprawl/termsprawl/tools"
)

// A search holds at most SearchConcurrency nodes' histories at once:
// the hook holds every capture that arrived until that many are held,
// and no other capture is even sent meanwhile. The matches still come
// in node order.
func TestSearchBoundsCaptures(t *testing.T) {
	t.Parallel()
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
	o.hooks.SearchCaptured = func(string) {
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
	t.Cleanup(func() { o.hooks.SearchCaptured = nil })
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

// A line wrapped over several rows is one line to the search (capture-pane
// -J joins it), and the lines after it keep terminal_scrollback's
// numbering: each match's line is where Scrollback reads it.
func TestSearchLinesOfWrappedText(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, "sh", "-c", "printf 'long-%0300d-end\\n' 7; printf 'wide-\\344\\270\\255%.0s' $(seq 1 60); echo; echo wrapped-after; seq 1 60; echo settled; exec sleep 600")
	waitText(t, o, id, "settled")
	for _, p := range []string{"long-0", "-end", "wide-", "wrapped-after", "settled"} {
		r, err := o.Search(t.Context(), SearchSpec{Pattern: p, Nodes: []string{id}})
		if err != nil || len(r.Matches) != 1 {
			t.Fatalf("%s: %+v %v", p, r, err)
		}
		line := r.Matches[0].Line
		sb, err := o.Scrollback(t.Context(), id, &line, &line, "")
		if err != nil || len(sb.Lines) != 1 {
			t.Fatalf("%s: scrollback at %d: %+v %v", p, line, sb, err)
		}
		first := p
		if p == "-end" {
			first = "long-0" // a wrapped line's match is at its first row
		}
		if !strings.Contains(sb.Lines[0].Text, first) {
			t.Errorf("%s: found at line %d, where the scrollback has %q", p, line, sb.Lines[0].Text)
		}
	}
}

// Searches share a memory budget (CONTRACT §31): a node whose capture
// would pass it is skipped with the budget's reason while the search
// answers; every grant is given back when the search ends.
func TestSearchMemoryBudget(t *testing.T) {
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, "sh", "-c", "echo budget-marker; exec sleep 600")
	waitText(t, o, id, "budget-marker")
	saved := searchMemory
	t.Cleanup(func() { searchMemory = saved })

	searchMemory = tools.NewMemoryBudget("searches", fleetsearch.Estimate-1)
	r, err := o.Search(t.Context(), SearchSpec{Pattern: "budget-marker", Nodes: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Matches) != 0 || len(r.Skipped) != 1 || !strings.Contains(r.Skipped[0].Reason, "memory budget") {
		t.Fatalf("past the budget: %+v", r)
	}

	searchMemory = tools.NewMemoryBudget("searches", SearchMemoryBudget)
	r, err = o.Search(t.Context(), SearchSpec{Pattern: "budget-marker", Nodes: []string{id}})
	if err != nil || len(r.Matches) != 1 || len(r.Skipped) != 0 {
		t.Fatalf("within the budget: %+v %v", r, err)
	}
	if n := searchMemory.InUse(); n != 0 || searchMemory.Grants() != 0 {
		t.Fatalf("%d bytes in %d grants held after the search", n, searchMemory.Grants())
	}
}
