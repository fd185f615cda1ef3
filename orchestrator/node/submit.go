package node

import (
	"context"
	"os"
	"strings"

	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// A submit is several steps (text, settle, Enter): an orchestrator
// killed between two of them used to leave text at the prompt without
// its Enter, and the next submit ran glued to it. So a submit writes its
// intent next to the node's metadata before its first step
// (nodes/ID.input, carrying the call's statefile.IntentOf), and adoption
// settles what it finds there (RecoverInput): an interrupted submit's
// line is cleared, never completed (docs/CHOICES.md "An interrupted
// submit is cleared, not completed").

// Submit types (or, for multi-line text, pastes) text, lets the program
// take it, then presses Enter exactly once. To Claude Code the text is
// always pasted (bracketed when it asked for that, as it does): typed, it
// read a burst of keys as a paste that its own timer ends, and under load
// an Enter pressed after the echo still reached it inside that paste, a
// new line instead of a submit (seen in CI). A bracketed paste ends where
// the text ends. pause, when not nil, runs
// between the text and Enter (the kill loop's test pause).
func (n *Node) Submit(ctx context.Context, text string, pause func()) error {
	mark, err := statefile.BeginSubmit(n.Env.Limits().StateDir, n.Meta.ID, statefile.IntentOf(ctx))
	if err != nil {
		return tools.Errorf(tools.KindNotRun, "terminal %q: the submit's intent could not be recorded, so nothing was sent (is the state dir's disk full?): %w", n.Meta.ID, err)
	}
	sent := false
	defer func() { mark.End(sent) }()
	n.NoteInput(SubmitKind(text))
	claude := n.Meta.Agent == "claude"
	if text != "" {
		before := n.Scr.Revision()
		if strings.ContainsAny(text, "\n\r") || claude {
			err = n.PasteText(ctx, text)
		} else {
			err = n.TypeText(ctx, text)
		}
		if err != nil {
			return err
		}
		n.Settle(ctx, before)
	}
	if pause != nil {
		pause()
	}
	if err := mark.Phase(statefile.PhaseEnter); err != nil {
		// The text is not left to glue to the next input.
		n.PressKeys(ctx, []string{"End", "C-u"})
		return tools.Errorf(tools.KindNotRun, "the submit's progress could not be recorded, so Enter was not pressed (is the state dir's disk full?): %w", err)
	}
	beforeEnter := n.Scr.Revision()
	if err := n.PressKeys(ctx, []string{"Enter"}); err != nil {
		return err
	}
	sent = true
	if claude && strings.TrimSpace(text) != "" {
		n.confirmTaken(ctx, text, beforeEnter)
	}
	return nil
}

// confirmTaken presses Enter once more when Claude Code still shows the
// submitted text in its input box after the Enter settled: under load it
// swallowed an Enter that came soon after the text (seen in CI, 2.1.197),
// and the turn never started. An extra Enter is harmless to Claude Code:
// on an empty input box, or during a turn, it does nothing.
func (n *Node) confirmTaken(ctx context.Context, text string, beforeEnter uint64) {
	n.Settle(ctx, beforeEnter)
	if !textInInputBox(n.Scr.Rows(), text) {
		return
	}
	n.Log.Info("the program kept the submitted text in its input box: Enter pressed again", "node", n.Meta.ID)
	if err := n.PressKeys(ctx, []string{"Enter"}); err != nil {
		n.Log.Warn("a second Enter for a kept submit", "err", err)
	}
}

// textInInputBox reports whether text stands in the input box of a TUI
// that draws it between two horizontal rules (Claude Code: a "─" rule,
// "❯ text", a "─" rule), the last such box on the screen. Spaces are
// ignored, so a text wrapped over several rows still matches.
func textInInputBox(rows []string, text string) bool {
	isRule := func(s string) bool {
		s = strings.TrimSpace(s)
		return len([]rune(s)) >= 10 && strings.Trim(s, "─") == ""
	}
	last, prev := -1, -1
	for i := len(rows) - 1; i >= 0 && prev < 0; i-- {
		if isRule(rows[i]) {
			if last < 0 {
				last = i
			} else {
				prev = i
			}
		}
	}
	if prev < 0 {
		return false
	}
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	box := squash(strings.TrimLeft(strings.TrimSpace(strings.Join(rows[prev+1:last], " ")), "❯>"))
	want := squash(text)
	return want != "" && strings.Contains(box, want)
}

// RecoverInput settles a submit a killed orchestrator left at the node
// (after it attached): one whose Enter was not surely sent gets its line
// cleared (End, then Ctrl+U: readline, zsh's line editor and a tty's own
// line discipline each erase the line with it), never an Enter. It
// returns what was done, for the tool server to settle the call's key;
// false when there was nothing to settle (no mark, or a mark without a
// key, which is removed here).
func (n *Node) RecoverInput(ctx context.Context) (statefile.Interrupted, bool) {
	path := statefile.Path(n.Env.Limits().StateDir, n.Meta.ID, statefile.Input)
	m, ok := statefile.ReadMark(path)
	if !ok {
		return statefile.Interrupted{}, false
	}
	in := statefile.Interrupted{Node: n.Meta.ID, Op: "terminal_submit", Intent: m.Intent}
	switch m.Phase {
	case statefile.PhaseDone:
		in.Outcome = statefile.OutcomeSubmitted
	default:
		in.Outcome = statefile.OutcomeCleared
		if m.Phase == statefile.PhaseEnter {
			in.Outcome = statefile.OutcomeMaybe
		}
		if err := n.PressKeys(ctx, []string{"End", "C-u"}); err != nil {
			n.Log.Warn("clear an interrupted submit's line", "err", err)
		} else {
			n.NoteInput("keys", "End C-u (an interrupted submit's line cleared)")
		}
		n.Log.Warn("an interrupted submit was cleared, not completed", "phase", m.Phase)
	}
	if m.Intent.Key == "" {
		os.Remove(path) // no key to settle
		return in, false
	}
	return in, true
}
