package orchestrator

import (
	"context"

	"github.com/termsprawl/termsprawl/orchestrator/notify"
)

// NotifyDelayMS is how long a message to humans stays on their status
// line, in milliseconds (any key press dismisses it sooner).
const NotifyDelayMS = 10000

// NotifyHumans shows msg for a while on the status line of every human
// client attached to any of termsprawl's tmux servers (control clients,
// ours, are left out) and returns how many were told. The message is one
// line: whitespace becomes single spaces, other controls are made
// visible (tools.VisibleLine), and it is cut to 200 characters in the
// middle (its end says what matters). Only display-message is sent (never a prompt, which would
// block a control client's queue in tmux 3.3a), with the text's `#`
// doubled so tmux shows it instead of expanding formats.
func (o *Orchestrator) NotifyHumans(ctx context.Context, msg string) (int, error) {
	text := notify.StatusText(msg)
	if text == "" {
		return 0, nil
	}
	return o.shards.Tell(ctx, text, NotifyDelayMS)
}

// NotifyTerminals writes seq (desktop-notification escape sequences, OSC
// 9 and 777: CONTRACT §20) to the terminal of every human client attached
// to one of this machine's private tmux servers, and returns how many got
// it. It writes to the client's tty itself (tmux's client_tty) in one
// write(2): tmux 3.3a has no command that sends bytes to a client's
// terminal (docs/CHOICES.md has the measurement). seq must be a complete
// sequence; a terminal that does not know it ignores it.
func (o *Orchestrator) NotifyTerminals(ctx context.Context, seq []byte) (int, error) {
	return o.shards.WriteTerminals(ctx, seq, notify.WriteTTY)
}
