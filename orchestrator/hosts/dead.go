package hosts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tmuxctl"
)

// A pane's end in tmux's words: the dead flag, exit status and signal of
// one format, and what they mean.

// DeadFormat reads a pane's death as one word: dead flag, exit status and
// signal, e.g. "1:7:" or "1::9" or "0::".
const DeadFormat = "#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}"

// ParseDead interprets DeadFormat. A pane whose pty closed before tmux
// collected the child's status is dead but not ready: its status will
// follow (the pane-died hook fires again), so it is not reported yet.
func ParseDead(word string) (exited bool, code int) {
	f := strings.Split(word, ":")
	if len(f) != 3 || f[0] != "1" {
		return false, 0
	}
	if v, err := strconv.Atoi(f[1]); err == nil {
		return true, v
	}
	if v, err := strconv.Atoi(f[2]); err == nil {
		return true, 128 + v
	}
	return false, 0
}

// CheckDead interprets tmux's dead word for a pane. tmux 3.3a sometimes
// leaves the child unreaped after the pty closed: it then has no status
// and fires no pane-died hook, so the status is read from /proc instead.
// The quiet-time check (heal) and every seed call this, so a program that
// printed anything before it exited is noticed even then.
// zombie reads the status on the pane's machine (the engine's
// zombieStatus).
func CheckDead(word string, pid int, zombie func(int) (int, bool)) (bool, int) {
	if exited, code := ParseDead(word); exited {
		return true, code
	}
	if strings.HasPrefix(word, "1:") && pid > 0 {
		if code, ok := zombie(pid); ok {
			return true, code
		}
	}
	return false, 0
}

// Deaths counts the deaths of tmux servers: each is counted once, by the
// admin client whose end was seen (Died).
type Deaths struct {
	mu        sync.Mutex // guards the fields below
	deadAdmin *tmuxctl.Client
	count     int
	last      string
}

// Died reports whether srv is gone (its admin client ended, or a round
// trip on it fails), with why, and records the death once: an error in
// log, counted in Health.
func (d *Deaths) Died(srv Server, log *slog.Logger) (string, bool) {
	admin := srv.Admin()
	err := admin.Err()
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = admin.Run(ctx, tmuxctl.Command("display-message", "-p", "ok"))
		cancel()
		if err != nil && !errors.Is(err, tmuxctl.ErrClosed) && !errors.Is(err, context.DeadlineExceeded) {
			err = nil // tmux answered, with an error: it lives
		}
	}
	if err == nil {
		return "", false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.deadAdmin != admin {
		d.deadAdmin = admin
		d.count++
		d.last = fmt.Sprintf("%s: %v", time.Now().UTC().Format(time.RFC3339), err)
		log.Error("the private tmux server died: its nodes are lost (listed as exited); the next launch starts a new server",
			"socket", srv.Socket(), "err", err)
	}
	return err.Error(), true
}

// Health is how many deaths were counted, and when and why the last was.
func (d *Deaths) Health() (deaths int, last string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.count, d.last
}
