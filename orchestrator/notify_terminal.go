package orchestrator

import (
	"context"
	"errors"
	"strings"

	"github.com/termsprawl/termsprawl/orchestrator/notify"
)

// NotifyTerminals writes seq (desktop-notification escape sequences, OSC
// 9 and 777: CONTRACT §20) to the terminal of every human client attached
// to one of this machine's private tmux servers, and returns how many got
// it. It writes to the client's tty itself (tmux's client_tty) in one
// write(2): tmux 3.3a has no command that sends bytes to a client's
// terminal (docs/CHOICES.md has the measurement). seq must be a complete
// sequence; a terminal that does not know it ignores it.
func (o *Orchestrator) NotifyTerminals(ctx context.Context, seq []byte) (int, error) {
	told := 0
	var errs []error
	seen := map[string]bool{}
	for _, sessions := range o.shards.HumanClients(ctx) {
		for _, names := range sessions {
			for _, tty := range names {
				if seen[tty] || !strings.HasPrefix(tty, "/dev/") {
					continue
				}
				seen[tty] = true
				if err := notify.WriteTTY(tty, seq); err != nil {
					errs = append(errs, err)
					continue
				}
				told++
			}
		}
	}
	return told, errors.Join(errs...)
}
