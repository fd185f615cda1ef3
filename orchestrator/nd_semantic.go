package orchestrator

import (
	"context"
	"encoding/json"

	"github.com/termsprawl/termsprawl/tools"
)

// semTerminal is a node as the semantic waits and actions see it.
type semTerminal struct {
	o  *Orchestrator
	n  *node
	id string
}

func (t semTerminal) Revision() uint64 { return t.n.scr.Revision() }

func (t semTerminal) Ended() <-chan struct{} { return t.n.closing }

func (t semTerminal) EndErr() error {
	return t.n.withCrash(tools.Errorf(tools.KindNotFound, "terminal %q ended while waiting for a semantic commit", t.n.meta.ID))
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

// recordSemantic notes a commit in the node's recording.
func (n *node) recordSemantic(rev uint64, tree json.RawMessage) {
	if rec := n.rec.Load(); rec != nil {
		rec.r.Semantic(rev, tree)
	}
}
