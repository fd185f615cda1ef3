package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/termsprawl/termsprawl/orchestrator/fleetsearch"
	"github.com/termsprawl/termsprawl/tmuxctl"
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

// searchCapture reads one node's history and screen: one command line
// (the sizes and capture-pane -J of the whole history) on its control
// client.
func (o *Orchestrator) searchCapture(ctx context.Context, id string, take func() error) (fleetsearch.Capture, error) {
	n, err := o.lookup(id)
	if err != nil {
		return fleetsearch.Capture{}, err
	}
	if err := take(); err != nil {
		return fleetsearch.Capture{}, err
	}
	if h := o.hooks.searchCommand; h != nil {
		h()
	}
	outs, err := n.Cmd().RunMany(ctx,
		tmuxctl.Command("display-message", "-p", "-t", n.Pane, "#{history_size} #{pane_width}"),
		tmuxctl.Command("capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", n.Pane))
	if err == nil && (len(outs) != 2 || len(outs[0]) != 1) {
		err = fmt.Errorf("unexpected reply %d blocks", len(outs))
	}
	if err != nil {
		return fleetsearch.Capture{}, n.TmuxErr("search", err)
	}
	if h := o.hooks.searchCaptured; h != nil {
		h(id)
	}
	c := fleetsearch.Capture{Name: n.Meta.Name, Lines: outs[1]}
	fmt.Sscanf(outs[0][0], "%d %d", &c.Hist, &c.Cols)
	return c, nil
}
