package orchestrator

import (
	"context"
	"path/filepath"

	"github.com/termsprawl/termsprawl/orchestrator/fleetsearch"
	"github.com/termsprawl/termsprawl/tools"
)

// SearchSpec is one fleet search (orchestrator/fleetsearch). The tool
// server resolved the nodes and kept them to the caller's realm.
type SearchSpec = fleetsearch.Spec

// SearchConcurrency bounds the captures in flight at once.
const SearchConcurrency = fleetsearch.Concurrency

// SearchMemoryBudget bounds the captured histories that searches hold
// at once, across every search (CONTRACT §31).
const SearchMemoryBudget = fleetsearch.MemoryBudget

var searchMemory = tools.NewMemoryBudget("searches", SearchMemoryBudget)

// Search runs a fleet search (CONTRACT §30) over the nodes' histories,
// read through the control client each node already has, and the
// recordings.
func (o *Orchestrator) Search(ctx context.Context, spec SearchSpec) (tools.FleetSearchResult, error) {
	s := fleetsearch.Searcher{Traces: filepath.Join(o.cfg.StateDir, TracesDir), Memory: searchMemory, Capture: o.searchCapture}
	return s.Run(ctx, spec)
}

// searchCapture reads one node's history and screen once the search
// took its share (node.SearchCapture).
func (o *Orchestrator) searchCapture(ctx context.Context, id string, take func() error) (fleetsearch.Capture, error) {
	n, err := o.lookup(id)
	if err != nil {
		return fleetsearch.Capture{}, err
	}
	if err := take(); err != nil {
		return fleetsearch.Capture{}, err
	}
	return n.SearchCapture(ctx)
}
