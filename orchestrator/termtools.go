package orchestrator

import (
	"cmp"
	"context"
	"fmt"
	"strings"

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
	r, err := o.sendInput(ctx, id, "", wait, func(n *node.Node) error {
		snap := n.Snapshot()
		if spec.Locator != nil || strings.HasPrefix(spec.Ref, "semantic:") {
			c, err := n.Sem.Target(id, spec.Locator, spec.Ref)
			if err != nil {
				return err
			}
			a.At = *c
		} else if spec.Ref != "" {
			c, err := n.ResolveRef(spec.Ref, snap.Lines)
			if err != nil {
				return err
			}
			a.At = c
		}
		for _, c := range []*tools.Cell{&a.At, a.DragTo()} {
			if c != nil && (c.Row >= snap.Rows || c.Column >= snap.Columns) {
				return usage("cell {row %d, column %d} is outside the screen (%d columns x %d rows: rows 0..%d, columns 0..%d)",
					c.Row, c.Column, snap.Columns, snap.Rows, snap.Rows-1, snap.Columns-1)
			}
		}
		mm := node.MouseModeOf(n.Scr.Modes())
		if ok, needs := a.Allowed(mm.Tracking); !ok {
			return tools.Errorf(tools.KindNotRun, "input-mode-disabled: terminal_%s needs %s and the program in %q has not enabled it (its mouse tracking is %s); nothing was sent. terminal_capabilities shows the program's mouse modes; drive it with terminal_press or terminal_type instead",
				spec.Kind, needs, id, mm.Tracking).WithDetails("reason", "input-mode-disabled").WithDetails("mouse", mm)
		}
		data, ok := termio.EncodeAction(a, mm)
		if !ok {
			return usage("the cell cannot be expressed in the program's %s mouse encoding (X10 reports stop at column and row 223); nothing was sent", mm.Encoding)
		}
		res = tools.MouseResult{Terminal: id, At: a.At, Mouse: mm, Bytes: len(data)}
		if spec.Kind == "drag" {
			to := a.To
			res.To = &to
		}
		n.NoteInput("mouse", fmt.Sprintf("%s %s at %d,%d", spec.Kind, cmp.Or(spec.Button, "left"), a.At.Row, a.At.Column))
		if err := n.SendRaw(ctx, data); err != nil {
			return err
		}
		n.RecordInputEvent(record.InputMouse, len(data), nil) // a recording notes it by kind and size
		return nil
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
