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
	var pause func()
	if testPauseMatches(testPauseSubmit, text) {
		pause = func() { o.testPause(ctx, "submit") }
	}
	r, err := o.sendInput(ctx, id, text, wait, noted(record.InputSubmit, len(text), nil, func(n *node.Node) error {
		return n.Submit(ctx, text, pause)
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
