package orchestrator

import (
	"context"
	"strconv"

	"github.com/termsprawl/termsprawl/orchestrator/notify"
	"github.com/termsprawl/termsprawl/tmuxctl"
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
	told := 0
	var firstErr error
	for srv, sessions := range o.shards.HumanClients(ctx) {
		for _, names := range sessions {
			for _, c := range names {
				cmd := tmuxctl.Command("display-message", "-c", c, "-d", strconv.Itoa(NotifyDelayMS), text)
				if _, err := srv.Admin().Run(ctx, cmd); err != nil {
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				told++
			}
		}
	}
	return told, firstErr
}
