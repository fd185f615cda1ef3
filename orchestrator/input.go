package orchestrator

import (
	"context"
	"strings"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/tools"
)

// sendInput runs an input operation on node id (node.SendInput).
func (o *Orchestrator) sendInput(ctx context.Context, id string, text string, wait *tools.WaitSpec, send func(n *node.Node) error) (tools.InputResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.InputResult{}, err
	}
	return n.SendInput(ctx, text, wait, send)
}

// noted wraps an input's send so a recording notes the input, by kind and
// size only, once it was sent.
func noted(kind string, size int, keys []string, send func(n *node.Node) error) func(n *node.Node) error {
	return func(n *node.Node) error {
		err := send(n)
		if err == nil {
			n.RecordInputEvent(kind, size, keys)
		}
		return err
	}
}

// Type sends literal text as keystrokes.
func (o *Orchestrator) Type(ctx context.Context, id, text string, wait *tools.WaitSpec) (tools.InputResult, error) {
	if text == "" {
		return tools.InputResult{}, usage("text is empty: nothing to type")
	}
	r, err := o.sendInput(ctx, id, text, wait, noted(record.InputType, len(text), nil, func(n *node.Node) error { n.NoteInput("text", node.ClipText(text)); return n.TypeText(ctx, text) }))
	r.Bytes = len(text)
	return r, err
}

// Press sends key chords.
func (o *Orchestrator) Press(ctx context.Context, id, keys string, wait *tools.WaitSpec) (tools.InputResult, error) {
	parsed, err := ParseKeys(keys)
	if err != nil {
		return tools.InputResult{}, tools.Errorf(tools.KindUsage, "%w", err)
	}
	r, err := o.sendInput(ctx, id, "", wait, noted(record.InputPress, len(parsed), parsed, func(n *node.Node) error {
		n.NoteInput("keys", strings.Join(parsed, " "))
		return n.PressKeys(ctx, parsed)
	}))
	r.Keys = parsed
	return r, err
}

// Paste pastes text, bracketed when the program enabled bracketed paste.
func (o *Orchestrator) Paste(ctx context.Context, id, text string, wait *tools.WaitSpec) (tools.InputResult, error) {
	if text == "" {
		return tools.InputResult{}, usage("text is empty: nothing to paste")
	}
	r, err := o.sendInput(ctx, id, text, wait, noted(record.InputPaste, len(text), nil, func(n *node.Node) error { n.NoteInput("paste", node.SizeText(text)); return n.PasteText(ctx, text) }))
	r.Bytes = len(text)
	return r, err
}

// Submit types (or, for multi-line text, pastes) the text, lets the
// program take it, then presses Enter exactly once.
func (o *Orchestrator) Submit(ctx context.Context, id, text string, wait *tools.WaitSpec) (tools.InputResult, error) {
	r, err := o.sendInput(ctx, id, text, wait, noted(record.InputSubmit, len(text), nil, func(n *node.Node) (err error) {
		// Its intent first: a kill between the text and Enter is settled
		// on adoption (interrupted.go).
		mark, err := o.beginSubmit(ctx, n)
		if err != nil {
			return err
		}
		sent := false
		defer func() { mark.End(sent) }()
		n.NoteInput(node.SubmitKind(text))
		if text != "" {
			if strings.ContainsAny(text, "\n\r") {
				err = n.PasteText(ctx, text)
			} else {
				err = n.TypeText(ctx, text)
			}
			if err != nil {
				return err
			}
			n.Settle(ctx)
		}
		if testPauseMatches(testPauseSubmit, text) {
			o.testPause(ctx, "submit")
		}
		if err := enterPhase(mark); err != nil {
			// The text is not left to glue to the next input.
			n.PressKeys(ctx, []string{"End", "C-u"})
			return err
		}
		if err := n.PressKeys(ctx, []string{"Enter"}); err != nil {
			return err
		}
		sent = true
		return nil
	}))
	r.Bytes = len(text)
	return r, err
}

// Interrupt presses Ctrl+C.
func (o *Orchestrator) Interrupt(ctx context.Context, id string, wait *tools.WaitSpec) (tools.InputResult, error) {
	r, err := o.sendInput(ctx, id, "", wait, noted(record.InputPress, 1, []string{"C-c"}, func(n *node.Node) error { n.NoteInput("keys", "C-c"); return n.PressKeys(ctx, []string{"C-c"}) }))
	r.Keys = []string{"C-c"}
	return r, err
}
