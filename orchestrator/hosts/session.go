package hosts

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/tmuxctl"
)

// Ending a node's session on its server the way a close does: a live
// program is hung up on, then killed, and tmux ends the pane and session
// itself; kill-session only for a pane tmux reports dead (tmux 3.3a's
// crash traps, docs/TMUX-CRASHES.md). The engine's close, a launch's
// rollback and a host's closes share these.

// The waits of an end: how long a program may take to exit after SIGHUP
// before it gets SIGKILL, how long tmux may then take to end the session,
// and how often they are checked.
const (
	CloseGrace   = time.Second
	CloseTimeout = 5 * time.Second
	ClosePoll    = 20 * time.Millisecond
)

// FinishSession ends a session whose clients are gone: a live program is
// hung up on, then killed, and tmux destroys its pane and session itself;
// kill-session is sent only to a pane tmux reports dead. It returns nil
// once tmux confirms the session gone and the program (pid, 0: none) is
// gone, or why not.
func FinishSession(ctx context.Context, srv Server, session string, pid int, live bool, log *slog.Logger) error {
	ended := !live
	// Hang up like a closing terminal; kill what ignores that.
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGHUP, CloseGrace}, {syscall.SIGKILL, CloseTimeout}} {
		if ended {
			break
		}
		srv.Signal(ctx, pid, step.sig)
		ended = WaitSessionGone(ctx, srv, session, step.wait)
	}
	if !ended && PaneDead(ctx, srv, session) {
		ended = true // remain-on-exit kept it: dead, so safe to kill
	}
	if ended {
		// A dead pane left by remain-on-exit, or nothing: safe.
		if _, err := srv.Admin().Run(ctx, tmuxctl.Command("kill-session", "-t", "="+session)); err != nil {
			log.Debug("kill-session of a dead pane", "session", session, "err", err)
		}
	}
	if !WaitSessionGone(ctx, srv, session, CloseGrace) {
		return fmt.Errorf("tmux still has session %s (its program did not end): %w", session, cmp.Or(ctx.Err(), ErrNotConfirmed))
	}
	if len(WaitPidsGone(ctx, srv, []int{pid}, CloseGrace)) > 0 {
		return fmt.Errorf("the program of session %s (pid %d) still runs: %w", session, pid, cmp.Or(ctx.Err(), ErrNotConfirmed))
	}
	return nil
}

// ErrNotConfirmed: tmux or the machine did not confirm an end in time.
var ErrNotConfirmed = errors.New("not confirmed in time")

// EndSession rolls back a session a launch created (its mirror never
// attached or failed) the way a close ends one: no kill-session on a live
// pane. pid 0: read it from tmux. It reports whether the end is confirmed.
func EndSession(ctx context.Context, srv Server, session string, pid int, log *slog.Logger) bool {
	admin := srv.Admin()
	out, err := admin.Run(ctx, tmuxctl.Command("display-message", "-p", "-t", "="+session+":", "#{pane_pid} #{pane_dead}"))
	if err != nil {
		var ce *tmuxctl.CommandError
		return errors.As(err, &ce) // no such session: nothing to end
	}
	dead := false
	if len(out) == 1 {
		f := strings.Fields(out[0])
		if len(f) == 2 {
			if pid == 0 {
				pid, _ = strconv.Atoi(f[0])
			}
			dead = f[1] == "1"
		}
	}
	if !dead {
		admin.Run(ctx, tmuxctl.Command("set-option", "-p", "-t", "="+session+":", "remain-on-exit", "off"))
	}
	WaitNoClients(ctx, srv, session)
	if err := FinishSession(ctx, srv, session, pid, !dead && pid > 0, log); err != nil {
		log.Error("roll back a launch's session", "session", session, "err", err)
		return false
	}
	return true
}

// Pause waits d or until ctx ends (false).
func Pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// WaitClientGone waits (checking every ClosePoll, for at most CloseGrace)
// until the tmux server no longer lists the control client with process
// id pid: the client process can exit before the server has let go of
// its state, and a pane destroyed in between crashes tmux 3.3a.
func WaitClientGone(ctx context.Context, srv Server, pid int) {
	want := strconv.Itoa(pid)
	deadline := time.Now().Add(CloseGrace)
	for {
		out, err := srv.Admin().Run(ctx, tmuxctl.Command("list-clients", "-F", "#{client_pid}"))
		if err != nil || !slices.Contains(out, want) || time.Now().After(deadline) || !Pause(ctx, ClosePoll) {
			return
		}
	}
}

// WaitNoClients waits, like WaitClientGone, until no client is attached
// to session (a failed attach's control client may linger in tmux).
func WaitNoClients(ctx context.Context, srv Server, session string) {
	deadline := time.Now().Add(CloseGrace)
	for {
		out, err := srv.Admin().Run(ctx, tmuxctl.Command("list-clients", "-t", "="+session, "-F", "#{client_pid}"))
		if err != nil || len(out) == 0 || time.Now().After(deadline) || !Pause(ctx, ClosePoll) {
			return
		}
	}
}

// WaitSessionGone checks every ClosePoll, for at most d, whether tmux has
// ended the session. (Nothing of ours is attached to it any more to be
// told, and this runs only while a terminal is being closed.)
func WaitSessionGone(ctx context.Context, srv Server, session string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if _, err := srv.Admin().Run(ctx, tmuxctl.Command("has-session", "-t", "="+session)); err != nil {
			var ce *tmuxctl.CommandError
			if errors.As(err, &ce) {
				return true // "can't find session": gone
			}
		}
		if time.Now().After(deadline) || !Pause(ctx, ClosePoll) {
			return false
		}
	}
}

// PaneDead reports whether tmux says session's pane is dead.
func PaneDead(ctx context.Context, srv Server, session string) bool {
	out, err := srv.Admin().Run(ctx, tmuxctl.Command("display-message", "-p", "-t", "="+session+":", "#{pane_dead}"))
	return err == nil && len(out) == 1 && strings.TrimSpace(out[0]) == "1"
}

// WaitPidsGone waits (checking every ClosePoll, for at most d) until
// every one of pids has ended on srv's machine, checking them all in one
// round trip each time; it answers those not confirmed ended (all of
// pids when the machine never answered).
func WaitPidsGone(ctx context.Context, srv Server, pids []int, d time.Duration) map[int]bool {
	deadline := time.Now().Add(d)
	for {
		live, err := srv.LivePids(ctx, pids)
		if err == nil && len(live) == 0 {
			return nil
		}
		if time.Now().After(deadline) || !Pause(ctx, ClosePoll) {
			if err != nil {
				live = map[int]bool{}
				for _, p := range pids {
					live[p] = true
				}
			}
			return live
		}
	}
}

// Ending is one session EndTogether ends: its name and its program's pid
// (0 when the program had ended already: no signal, nothing to wait for).
type Ending struct {
	Session string
	Pid     int
}

// EndTogether ends sessions of one server together (hosts rm
// --close-nodes; call with the server's lifecycle lock held, the sessions'
// clients detached and remain-on-exit off for the live ones): every
// program is hung up on at once (one ssh session on a host), the sessions
// are polled together with one list-sessions, what ignored the hang-up is
// killed together, a pane left dead is killed, and each session and
// program is confirmed gone, the programs all in one check each poll
// (one ssh session per program, one after another, ran 64 closes out of
// their shared deadline on a loaded machine). The answer is one error per
// ending, nil for those confirmed gone.
func EndTogether(ctx context.Context, srv Server, ends []Ending) []error {
	live := func() map[string]bool {
		out, err := srv.Admin().Run(ctx, tmuxctl.Command("list-sessions", "-F", "#{session_name}"))
		if err != nil {
			return nil
		}
		m := map[string]bool{}
		for _, s := range out {
			m[s] = true
		}
		return m
	}
	var pids []int
	for _, e := range ends {
		if e.Pid > 0 {
			pids = append(pids, e.Pid)
		}
	}
	signalAll := func(sig syscall.Signal) { srv.SignalAll(ctx, pids, sig) }
	waitGone := func(d time.Duration) map[string]bool {
		deadline := time.Now().Add(d)
		for {
			l := live()
			left := 0
			for _, e := range ends {
				if l == nil || l[e.Session] {
					left++
				}
			}
			if (l != nil && left == 0) || time.Now().After(deadline) || !Pause(ctx, 50*time.Millisecond) {
				return l
			}
		}
	}
	signalAll(syscall.SIGHUP)
	if l := waitGone(CloseGrace); l == nil || len(l) > 0 {
		signalAll(syscall.SIGKILL)
		waitGone(CloseTimeout)
	}
	// A pane left dead (remain-on-exit kept it) is safe to kill.
	l := live()
	for _, e := range ends {
		if l[e.Session] && PaneDead(ctx, srv, e.Session) {
			srv.Admin().Run(ctx, tmuxctl.Command("kill-session", "-t", "="+e.Session))
		}
	}
	l = waitGone(CloseGrace)
	var running map[int]bool
	if l != nil {
		running = WaitPidsGone(ctx, srv, pids, CloseGrace)
	}
	errs := make([]error, len(ends))
	for i, e := range ends {
		switch {
		case l == nil:
			errs[i] = fmt.Errorf("the host did not answer: %w", ErrUnreachable)
		case l[e.Session]:
			errs[i] = fmt.Errorf("tmux still has session %s (its program did not end): %w", e.Session, ErrNotConfirmed)
		case running[e.Pid]:
			errs[i] = fmt.Errorf("its program (pid %d) still runs: %w", e.Pid, ErrNotConfirmed)
		}
	}
	return errs
}

// SessionGone reports whether it is certain that srv has no session of
// that name: tmux says "can't find session" (any other error is not
// certainty).
func SessionGone(ctx context.Context, srv Server, session string) bool {
	_, err := srv.Admin().Run(ctx, tmuxctl.Command("has-session", "-t", "="+session))
	var ce *tmuxctl.CommandError
	return errors.As(err, &ce)
}

// ListPanes is every pane of srv with its dead flag and pid, one line
// each: the session's name, DeadFormat's fields, the pid.
func ListPanes(ctx context.Context, srv Server) ([]string, error) {
	return srv.Admin().Run(ctx, tmuxctl.Command("list-panes", "-a", "-F", "#{session_name} "+DeadFormat+" #{pane_pid}"))
}
