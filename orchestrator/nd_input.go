package orchestrator

import (
	"context"
	"time"

	"github.com/termsprawl/termsprawl/tmuxctl"
)

func (n *node) typeText(ctx context.Context, text string) error {
	if _, err := n.client.Run(ctx, tmuxctl.Command("send-keys", "-t", n.pane, "-l", "--", text)); err != nil {
		return n.tmuxErr("type", err)
	}
	return nil
}

func (n *node) pressKeys(ctx context.Context, keys []string) error {
	args := append([]string{"-t", n.pane}, keys...)
	if _, err := n.client.Run(ctx, tmuxctl.Command("send-keys", args...)); err != nil {
		return n.tmuxErr("press", err)
	}
	return nil
}

func (n *node) pasteText(ctx context.Context, text string) error {
	buf := "termsprawl-paste-" + n.meta.ID
	// -p brackets only if the program asked for it; -d deletes the buffer.
	_, err := n.client.RunMany(ctx,
		tmuxctl.Command("set-buffer", "-b", buf, "--", text),
		tmuxctl.Command("paste-buffer", "-p", "-d", "-b", buf, "-t", n.pane))
	if err != nil {
		return n.tmuxErr("paste", err)
	}
	return nil
}

// Submit settle times: Enter is pressed only after the program took the
// text (its screen stayed unchanged for submitQuiet) and at least
// submitMinDelay after the text was sent (TUIs such as Claude Code and
// Codex swallow an Enter that arrives within ~100 ms of a paste), and at
// most submitMaxDelay after it.
const (
	submitMinDelay = 150 * time.Millisecond
	submitQuiet    = 50 * time.Millisecond
	submitMaxDelay = 2 * time.Second
)

// settle waits until the screen has been quiet for submitQuiet, and at
// least submitMinDelay has passed, bounded by submitMaxDelay.
func (n *node) settle(ctx context.Context) {
	start := time.Now()
	hard := time.NewTimer(submitMaxDelay)
	defer hard.Stop()
	for !n.isClosing() {
		_, changed := n.scr.WaitState()
		wait := submitQuiet
		if rest := submitMinDelay - time.Since(start); rest > wait {
			wait = rest
		}
		t := time.NewTimer(wait)
		select {
		case <-changed:
			t.Stop()
			continue
		case <-t.C:
			if time.Since(start) >= submitMinDelay {
				return
			}
		case <-hard.C:
			t.Stop()
			return
		case <-n.closing:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}
