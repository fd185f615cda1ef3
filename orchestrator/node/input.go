package node

import (
	"context"
	"time"

	"github.com/termsprawl/termsprawl/tmuxctl"
)

func (n *Node) TypeText(ctx context.Context, text string) error {
	if _, err := n.Cmd().Run(ctx, tmuxctl.Command("send-keys", "-t", n.Pane, "-l", "--", text)); err != nil {
		return n.TmuxErr("type", err)
	}
	return nil
}

func (n *Node) PressKeys(ctx context.Context, keys []string) error {
	args := append([]string{"-t", n.Pane}, keys...)
	if _, err := n.Cmd().Run(ctx, tmuxctl.Command("send-keys", args...)); err != nil {
		return n.TmuxErr("press", err)
	}
	return nil
}

func (n *Node) PasteText(ctx context.Context, text string) error {
	buf := "termsprawl-paste-" + n.Meta.ID
	// -p brackets only if the program asked for it; -d deletes the buffer.
	_, err := n.Cmd().RunMany(ctx,
		tmuxctl.Command("set-buffer", "-b", buf, "--", text),
		tmuxctl.Command("paste-buffer", "-p", "-d", "-b", buf, "-t", n.Pane))
	if err != nil {
		return n.TmuxErr("paste", err)
	}
	return nil
}

// Submit settle times: Enter is pressed only after the program took the
// text — its screen changed (the echo) and then stayed unchanged for
// submitQuiet — and at least submitMinDelay after the text was sent (TUIs
// such as Claude Code and Codex swallow an Enter that arrives within
// ~100 ms of a paste), and at most submitMaxDelay after it. The echo is
// awaited because a quiet screen alone proves nothing on a loaded
// machine: a TUI not yet scheduled shows nothing, then reads the text and
// the Enter in one read and takes the Enter as part of a paste (Claude
// Code kept the line, seen under load). A program that never shows the
// text (a password prompt) is given submitMaxDelay.
const (
	submitMinDelay = 150 * time.Millisecond
	submitQuiet    = 50 * time.Millisecond
	submitMaxDelay = 2 * time.Second
)

// Settle waits until the screen has changed since revision sent (the
// revision before the text was sent) and then been quiet for
// submitQuiet, and at least submitMinDelay has passed, bounded by
// submitMaxDelay.
func (n *Node) Settle(ctx context.Context, sent uint64) {
	start := time.Now()
	hard := time.NewTimer(submitMaxDelay)
	defer hard.Stop()
	quiet := time.NewTimer(time.Hour)
	defer quiet.Stop()
	echoed := n.Scr.Revision() > sent
	for !n.IsClosing() {
		_, changed := n.Scr.WaitState()
		// Until the echo only a change (or the bound) ends the wait; the
		// quiet period is timed once the program has shown something.
		var quietC <-chan time.Time
		if echoed {
			quiet.Reset(max(submitQuiet, submitMinDelay-time.Since(start)))
			quietC = quiet.C
		}
		select {
		case <-changed:
			echoed = true
		case <-quietC:
			if time.Since(start) >= submitMinDelay {
				return
			}
		case <-hard.C:
			return
		case <-n.Closing:
			return
		case <-ctx.Done():
			return
		}
	}
}
