package orchestrator

import (
	"context"
	"encoding/json"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/semantic"
	"github.com/termsprawl/termsprawl/orchestrator/semstore"
	"github.com/termsprawl/termsprawl/tools"
)

// Semantic trees (CONTRACT §22): the commits a node's probe publishes,
// kept per node (the latest and a bounded history), and the tools that
// target nodes of the tree. Validation, locators, lines and diffs are the
// pure room orchestrator/semantic.

// PublishSemantic commits a tree for node id, which must be the caller's
// own node (the tool server passes the caller's node; no other node's
// tree ever changes). A bad tree is a usage error with details.reason and
// changes nothing.
func (o *Orchestrator) PublishSemantic(id string, raw json.RawMessage) (tools.SemanticPublished, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.SemanticPublished{}, err
	}
	return n.PublishSemantic(raw)
}

// SemanticAction is terminal_fill, terminal_check or terminal_uncheck.
type SemanticAction = semstore.Action

// WaitSemantic is terminal_wait_for {wait: semantic} (semstore.Store.Wait).
func (o *Orchestrator) WaitSemantic(ctx context.Context, id string, spec tools.WaitSpec) (tools.WaitResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.WaitResult{}, err
	}
	res, err := n.Sem.Wait(ctx, semTerminal{o, n, id}, id, spec)
	if res.Wait != "" {
		res.Status, res.ExitCode, _ = n.State()
	}
	return res, err
}

// ActSemantic performs a SemanticAction through real input and verifies
// it from a later commit (semstore.Store.Act).
func (o *Orchestrator) ActSemantic(ctx context.Context, id string, a SemanticAction) (tools.SemanticActionResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.SemanticActionResult{}, err
	}
	return n.Sem.Act(ctx, semTerminal{o, n, id}, id, a)
}

// TraceSemanticAt is the compact lines of the tree a trace's program had
// committed last at ms (nil when none).
func (o *Orchestrator) TraceSemanticAt(id string, ms int64) []string {
	t, err := o.traces.Get(id)
	if err != nil {
		return nil
	}
	raw, rev := t.SemanticAt(ms)
	if raw == nil {
		return nil
	}
	var root semantic.Node
	if json.Unmarshal(raw, &root) != nil {
		return nil
	}
	return semantic.Lines(&root, rev)
}

// SemanticTree is node id's latest commit as matches in reading order
// (the monitor's view), false without one. It never wakes the node.
func (o *Orchestrator) SemanticTree(id string) (uint64, []tools.SemanticMatch, bool) {
	n := o.node(id)
	if n == nil {
		return 0, nil, false
	}
	c, ok := n.Sem.Latest()
	if !ok {
		return 0, nil, false
	}
	flat := semantic.Flatten(c.Root)
	out := make([]tools.SemanticMatch, len(flat))
	for i, f := range flat {
		out[i] = semstore.MatchOf(f, c.Rev)
	}
	return c.Rev, out, true
}

// semTerminal is a node as the semantic waits and actions see it.
type semTerminal struct {
	o  *Orchestrator
	n  *node.Node
	id string
}

func (t semTerminal) Revision() uint64 { return t.n.Scr.Revision() }

func (t semTerminal) Ended() <-chan struct{} { return t.n.Closing }

func (t semTerminal) EndErr() error {
	return t.n.WithCrash(tools.Errorf(tools.KindNotFound, "terminal %q ended while waiting for a semantic commit", t.n.Meta.ID))
}

func (t semTerminal) Click(ctx context.Context, row, col int) error {
	_, err := t.o.Mouse(ctx, t.id, MouseSpec{Kind: "click", At: &tools.Cell{Row: row, Column: col}}, nil)
	return err
}

func (t semTerminal) Press(ctx context.Context, keys string) error {
	_, err := t.o.Press(ctx, t.id, keys, nil)
	return err
}

func (t semTerminal) Type(ctx context.Context, text string) error {
	_, err := t.o.Type(ctx, t.id, text, nil)
	return err
}
