package orchestrator

import (
	"context"
	"fmt"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/orchestrator/termio"

	"github.com/termsprawl/termsprawl/tools"
)

// termwright's terminal tools (CONTRACT §11): capabilities, query, the
// mouse, raw bytes.

// MouseSpec is a mouse operation's request, decoded by the tool server
// (termio.MouseSpec).
type MouseSpec = termio.MouseSpec

// Mouse sends a mouse action as real mouse reports encoded for the modes
// the program enabled, or refuses (not_run, input-mode-disabled, nothing
// sent) when it has not enabled the tracking the action needs.
func (o *Orchestrator) Mouse(ctx context.Context, id string, spec MouseSpec, wait *tools.WaitSpec) (tools.MouseResult, error) {
	a, err := termio.ActionOf(spec)
	if err != nil {
		return tools.MouseResult{}, err
	}
	var res tools.MouseResult
	r, err := o.sendInput(ctx, id, "", wait, func(n *node.Node) (err error) {
		res, err = n.Mouse(ctx, spec, a)
		return err
	})
	res.Terminal, res.Revision, res.Wait = id, r.Revision, r.Wait
	return res, err
}

// WriteRaw sends bytes to the program verbatim.
func (o *Orchestrator) WriteRaw(ctx context.Context, id string, data []byte, wait *tools.WaitSpec) (tools.InputResult, error) {
	if len(data) == 0 {
		return tools.InputResult{}, usage("no bytes to write: give text or base64")
	}
	r, err := o.sendInput(ctx, id, "", wait, noted(record.InputRaw, len(data), nil, func(n *node.Node) error {
		n.NoteInput("raw", fmt.Sprintf("%d bytes", len(data)))
		return n.SendRaw(ctx, data)
	}))
	r.Bytes = len(data)
	return r, err
}

// Capabilities says what the terminal and its program support now.
func (o *Orchestrator) Capabilities(ctx context.Context, id string) (tools.Capabilities, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.Capabilities{}, err
	}
	return n.Capabilities(ctx)
}

// QuerySpec is what terminal_query looks for (node.QuerySpec).
type QuerySpec = node.QuerySpec

// Query finds text or a regex on the visible screen.
func (o *Orchestrator) Query(ctx context.Context, id string, q QuerySpec) (tools.QueryResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.QueryResult{}, err
	}
	return n.Query(ctx, q)
}
