package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// CloseNode ends the node's program and tmux session and removes its
// files (its token dies with it).
//
// tmux 3.3a crashes (a segfault in its control-mode output path) when
// kill-session destroys a live pane while other panes are busy sending
// output to control clients; measured in TestConcurrentNodes. So a live
// node is closed the way tmux closes sessions every day: remain-on-exit is
// turned off for its pane, its program's process group is signalled, and
// tmux destroys the pane and the session itself. Our own control client
// detaches first. The program gets SIGHUP first (as when a terminal
// closes) and SIGKILL after closeGrace. kill-session is used only for a
// pane tmux reports dead.
//
// Once it began, a close runs to its end on its own deadline
// (closeDeadline), whatever the caller does (CONTRACT §24): a caller that
// goes away gets an error saying the close goes on. The node is forgotten
// only when tmux confirms its session gone and its program is gone.
func (o *Orchestrator) CloseNode(ctx context.Context, id string) error {
	if o.lostOne(id) != nil && o.node(id) == nil {
		return o.Forget(id) // a lost node has nothing to end (lost.go)
	}
	if n := o.node(id); n != nil && n.ClosePending.Load() {
		return closePendingErr(n) // still waiting for its host (remote_close.go)
	}
	n, err := o.lookupFor(id, true)
	if m := o.node(id); err != nil && m != nil && !m.IsClosing() && m.Meta.Host != "" && o.hostDown(m) {
		n, err = m, nil // its host is unreachable: the close waits for it (remote_close.go)
	}
	if err != nil {
		return err
	}
	if !o.beginOp() {
		return errShuttingDown()
	}
	// Published before the screen is detached: waits end now, and new
	// operations on the node answer not_found. Only the first close of a
	// node goes on.
	if !n.BeginClose() {
		o.ops.Done()
		return tools.Errorf(tools.KindNotFound, "no terminal %q: call terminal_list to see the terminals", id)
	}
	// Its intent first: a kill during the close is finished on adoption
	// (interrupted.go). A close goes on even if it cannot be recorded.
	if err := statefile.WriteMark(o.closeMarkPath(id), statefile.Mark{Op: "close", Intent: intentOf(ctx), Started: time.Now().UTC()}); err != nil {
		o.log.Warn("record a close's intent", "node", id, "err", err)
	}
	if o.hostDown(n) {
		// Nothing can end it now: listed as closing until the host
		// answers (remote_close.go), never forgotten.
		defer o.ops.Done()
		n.Detach()
		n.ClosePending.Store(true)
		return closePendingErr(n)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeDeadline)
	done := make(chan error, 1)
	go func() {
		defer o.ops.Done()
		defer cancel()
		err := o.closeNode(cctx, n)
		if err != nil && o.hostDown(n) {
			n.ClosePending.Store(true) // the host went away during the close
			err = closePendingErr(n)
		}
		if err == nil && n.Meta.Host == "" {
			o.reclaimShards(cctx) // an empty shard's server goes too
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("close %s: the request ended, the close goes on: %w", id, ctx.Err())
	}
}

// closeNode is a close's steps, under the node's server's lifecycle lock,
// on the close's own context.
func (o *Orchestrator) closeNode(ctx context.Context, n *node.Node) error {
	id := n.Meta.ID
	n.Srv.Life().Lock()
	defer n.Srv.Life().Unlock()
	pid := n.Pid()
	status, _, gone := n.State()
	live := !gone && status != tools.StatusExited && pid > 0
	if live {
		// On the admin client: through the node's own, the reply would
		// wait behind the pane's queued output. If it fails, the pane
		// stays dead after its program ended and is killed as dead.
		if _, err := n.Srv.Admin().Run(ctx, tmuxctl.Command("set-option", "-p", "-t", n.Pane, "remain-on-exit", "off")); err != nil {
			o.log.Debug("remain-on-exit off", "node", id, "err", err)
		}
	}
	// Our client leaves first: tmux 3.3a also crashed when the pane died
	// with our control client still attached. detach pauses the pane's
	// output for it before it goes (docs/TMUX-CRASHES.md).
	clientPid := 0
	if n.Client != nil {
		clientPid = o.clientPID(ctx, n)
	}
	n.Detach()
	if o.hooks.closed != nil {
		o.hooks.closed(n)
	}
	if testPauseMatches(testPauseClose, n.Meta.Name) && !recovering(ctx) {
		o.testPause(ctx, "close")
	}
	switch {
	case gone:
		// Lost with its server: nothing of it is left in tmux to end.
	case n.Client == nil:
		// Listed unattached (adopt.go): tmux tells its pane's pid and
		// whether it is dead.
		if !o.endSession(ctx, n.Srv, n.Session(), 0) {
			return tools.Errorf(tools.KindUnavailable, "close %s: its session did not end in time", id)
		}
	default:
		o.waitClientGone(ctx, n.Srv, clientPid)
		if err := o.finishSession(ctx, n.Srv, n.Session(), pid, live); err != nil {
			o.log.Error("close did not finish: the node is kept", "node", id, "err", err)
			return tools.Errorf(tools.KindUnavailable, "close %s: %w", id, err)
		}
	}
	n.MarkGone()
	o.mu.Lock()
	delete(o.nodes, id)
	o.mu.Unlock()
	o.removeFiles(id)
	o.gone(n)
	o.log.Info("closed node", "node", id)
	return nil
}

// finishSession ends a session whose clients are gone: a live program is
// hung up on, then killed, and tmux destroys its pane and session itself;
// kill-session is sent only to a pane tmux reports dead. It returns nil
// once tmux confirms the session gone and the program (pid, 0: none) is
// gone, or why not.
func (o *Orchestrator) finishSession(ctx context.Context, srv hosts.Server, session string, pid int, live bool) error {
	ended := !live
	// Hang up like a closing terminal; kill what ignores that.
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGHUP, closeGrace}, {syscall.SIGKILL, closeTimeout}} {
		if ended {
			break
		}
		srv.Signal(ctx, pid, step.sig)
		ended = o.waitSessionGone(ctx, srv, session, step.wait)
	}
	if !ended && o.paneDead(ctx, srv, session) {
		ended = true // remain-on-exit kept it: dead, so safe to kill
	}
	if ended {
		// A dead pane left by remain-on-exit, or nothing: safe.
		if _, err := srv.Admin().Run(ctx, tmuxctl.Command("kill-session", "-t", "="+session)); err != nil {
			o.log.Debug("kill-session of a dead pane", "session", session, "err", err)
		}
	}
	if !o.waitSessionGone(ctx, srv, session, closeGrace) {
		return fmt.Errorf("tmux still has session %s (its program did not end): %w", session, cmp.Or(ctx.Err(), errNotConfirmed))
	}
	if !o.waitPidGone(ctx, srv, pid, closeGrace) {
		return fmt.Errorf("the program of session %s (pid %d) still runs: %w", session, pid, cmp.Or(ctx.Err(), errNotConfirmed))
	}
	return nil
}

// errNotConfirmed: tmux or the machine did not confirm an end in time.
var errNotConfirmed = errors.New("not confirmed in time")

// endSession rolls back a session a launch created (its mirror never
// attached or failed) the way a close ends one: no kill-session on a live
// pane. pid 0: read it from tmux. It reports whether the end is confirmed.
func (o *Orchestrator) endSession(ctx context.Context, srv hosts.Server, session string, pid int) bool {
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
	o.waitNoClients(ctx, srv, session)
	if err := o.finishSession(ctx, srv, session, pid, !dead && pid > 0); err != nil {
		o.log.Error("roll back a launch's session", "session", session, "err", err)
		return false
	}
	return true
}

// pause waits d or until ctx ends (false).
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// waitClientGone waits (checking every closePoll, for at most closeGrace)
// until the tmux server no longer lists the control client with process
// id pid: the client process can exit before the server has let go of
// its state, and a pane destroyed in between crashes tmux 3.3a.
func (o *Orchestrator) waitClientGone(ctx context.Context, srv hosts.Server, pid int) {
	want := strconv.Itoa(pid)
	deadline := time.Now().Add(closeGrace)
	for {
		out, err := srv.Admin().Run(ctx, tmuxctl.Command("list-clients", "-F", "#{client_pid}"))
		if err != nil || !slices.Contains(out, want) || time.Now().After(deadline) || !pause(ctx, closePoll) {
			return
		}
	}
}

// waitNoClients waits, like waitClientGone, until no client is attached
// to session (a failed attach's control client may linger in tmux).
func (o *Orchestrator) waitNoClients(ctx context.Context, srv hosts.Server, session string) {
	deadline := time.Now().Add(closeGrace)
	for {
		out, err := srv.Admin().Run(ctx, tmuxctl.Command("list-clients", "-t", "="+session, "-F", "#{client_pid}"))
		if err != nil || len(out) == 0 || time.Now().After(deadline) || !pause(ctx, closePoll) {
			return
		}
	}
}

// waitSessionGone checks every closePoll, for at most d, whether tmux has
// ended the session. (Nothing of ours is attached to it any more to be
// told, and this runs only while a terminal is being closed.)
func (o *Orchestrator) waitSessionGone(ctx context.Context, srv hosts.Server, session string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if _, err := srv.Admin().Run(ctx, tmuxctl.Command("has-session", "-t", "="+session)); err != nil {
			var ce *tmuxctl.CommandError
			if errors.As(err, &ce) {
				return true // "can't find session": gone
			}
		}
		if time.Now().After(deadline) || !pause(ctx, closePoll) {
			return false
		}
	}
}

// paneDead reports whether tmux says session's pane is dead.
func (o *Orchestrator) paneDead(ctx context.Context, srv hosts.Server, session string) bool {
	out, err := srv.Admin().Run(ctx, tmuxctl.Command("display-message", "-p", "-t", "="+session+":", "#{pane_dead}"))
	return err == nil && len(out) == 1 && strings.TrimSpace(out[0]) == "1"
}

// waitPidGone checks every closePoll, for at most d, whether process pid
// has ended (on its machine: a host's pid is looked up there).
func (o *Orchestrator) waitPidGone(ctx context.Context, srv hosts.Server, pid int, d time.Duration) bool {
	if pid <= 0 {
		return true
	}
	deadline := time.Now().Add(d)
	for {
		if srv.PidGone(ctx, pid) {
			return true
		}
		if time.Now().After(deadline) || !pause(ctx, closePoll) {
			return false
		}
	}
}

// CloseNode's waits: how long a program may take to exit after SIGHUP
// before it gets SIGKILL, how long tmux may then take to end the session,
// and the whole close's own deadline.
const (
	closeGrace    = time.Second
	closeTimeout  = 5 * time.Second
	closePoll     = 20 * time.Millisecond
	closeDeadline = 20 * time.Second
)

// clientEnded is called by a node's pump when its control client ended.
func (o *Orchestrator) clientEnded(n *node.Node) {
	o.mu.Lock()
	closing := o.closing
	o.mu.Unlock()
	if closing {
		return
	}
	select {
	case <-n.Quit:
		return // closed on purpose
	default:
	}
	if o.remoteLost(n) {
		return // its host is unreachable: the host reconnects (host.go)
	}
	if reason, dead := o.serverDied(n.Srv); dead {
		// Every node of the server is lost at once (CONTRACT §26): listed
		// lost, restorable now; one whose program had exited before
		// stays exited.
		o.loseNode(n, reason)
		return
	}
	if !o.sessionGone(context.Background(), n.Meta) {
		// Our client was detached (a human's `detach-client -s`, say) but
		// the session lives: mirror it again, never forget it.
		n.Log.Warn("control client detached while the session lives; attaching again", "reason", n.Client.Err())
		if !o.beginOp() {
			return // Close began: the next orchestrator adopts the session
		}
		go func() {
			defer o.ops.Done()
			o.reattach(n)
		}()
		return
	}
	n.Log.Info("tmux session ended", "reason", n.Client.Err())
	n.MarkGone()
	o.forget(n.Meta.ID)
}

// reattach mirrors a node whose control client was detached from outside:
// a new incarnation of its mirror (epoch+1, so revisions never repeat)
// replaces the old one under the same id, with the same files and token.
// It runs in its own goroutine, started by clientEnded and counted in
// ops (so Close waits for it), and ends when the new mirror is attached or
// the attempt failed; or by a host's adoption after a reconnect.
func (o *Orchestrator) reattach(old *node.Node) {
	if o.hooks.reattach != nil {
		o.hooks.reattach(old)
	}
	if o.hooks.reattached != nil {
		defer o.hooks.reattached(old)
	}
	life := o.serverFor(old.Meta).Life()
	life.Lock()
	defer life.Unlock()
	if o.node(old.Meta.ID) != old || old.IsClosing() || o.isClosing() {
		return // closed or replaced meanwhile
	}
	<-old.Done
	old.Scr.Close()
	meta := old.Meta
	meta.Recording = ""
	if rec := old.Rec.Load(); rec != nil {
		// The new mirror goes on with the recording: a gap, then a frame.
		meta.Recording = rec.Dir
		old.StopRecording()
	}
	meta.Epoch++
	if err := tools.WriteJSONAtomic(o.metaPath(meta.ID), meta); err != nil {
		o.log.Warn("reattach: write node metadata", "node", meta.ID, "err", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n := o.newNode(meta)
	if err := n.Attach(ctx); err != nil {
		o.log.Warn("reattach failed: the node is reported exited", "node", meta.ID, "err", err)
		old.MarkLost("termsprawl's mirror of the session was detached and could not attach again: " + err.Error())
		return
	}
	o.mu.Lock()
	o.nodes[meta.ID] = n
	o.mu.Unlock()
	old.MarkGone() // waiters on the old mirror end; the node lives on in n
	o.log.Info("node attached again", "node", meta.ID)
}

// serverDied reports whether the private tmux server is gone (its admin
// client ended, or a round trip on it fails), and records the death once:
// an error in the log, counted in ServerHealth.
func (o *Orchestrator) serverDied(srv hosts.Server) (string, bool) {
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
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.deadAdmin != admin {
		o.deadAdmin = admin
		o.serverDeaths++
		o.lastServerDeath = fmt.Sprintf("%s: %v", time.Now().UTC().Format(time.RFC3339), err)
		o.log.Error("the private tmux server died: its nodes are lost (listed as exited); the next launch starts a new server",
			"socket", srv.Socket(), "err", err)
	}
	return err.Error(), true
}

// ServerHealth tells how often the private tmux server died while this
// orchestrator ran, and when and why it last did.
func (o *Orchestrator) ServerHealth() (deaths int, last string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.serverDeaths, o.lastServerDeath
}

// forget drops a node whose session no longer exists, with its files.
func (o *Orchestrator) forget(id string) {
	o.mu.Lock()
	n := o.nodes[id]
	delete(o.nodes, id)
	o.mu.Unlock()
	o.removeFiles(id)
	if n != nil {
		n.StopRecording()
		go n.Scr.Close()
		o.gone(n)
		if n.Meta.Host == "" && o.beginOp() {
			go func() {
				defer o.ops.Done()
				ctx, cancel := context.WithTimeout(context.Background(), closeDeadline)
				defer cancel()
				o.reclaimShards(ctx)
			}()
		}
	}
}
