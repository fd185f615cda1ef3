package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
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
	for _, sessions := range o.humanClients(ctx) {
		for _, names := range sessions {
			for _, tty := range names {
				if seen[tty] || !strings.HasPrefix(tty, "/dev/") {
					continue
				}
				seen[tty] = true
				if err := writeTTY(tty, seq); err != nil {
					errs = append(errs, err)
					continue
				}
				told++
			}
		}
	}
	return told, errors.Join(errs...)
}

// writeTTY writes b to a terminal device without making it this
// process's controlling terminal and without blocking on a stuck one.
func writeTTY(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open the client's terminal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return fmt.Errorf("%s is not a terminal", path)
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("write to the client's terminal %s: %w", path, err)
	}
	return nil
}
