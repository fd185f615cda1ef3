package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"syscall"
	"time"

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
// tmux destroys the pane and the session itself. Our own control client detaches first. The program
// gets SIGHUP first (as when a terminal closes) and SIGKILL after
// closeGrace. kill-session is used only for a pane that is already
// dead, or if the session outlives closeTimeout.
func (o *Orchestrator) CloseNode(ctx context.Context, id string) error {
	// One lifecycle change at a time: tmux 3.3a crashed when a session
	// was destroyed while another was being created or attached.
	o.lifecycleMu.Lock()
	defer o.lifecycleMu.Unlock()
	n, err := o.lookup(id)
	if err != nil {
		return err
	}
	// Published before the screen is detached: waits end now, and new
	// operations on the node answer not_found.
	n.beginClose()
	n.mu.Lock()
	pid := n.pid
	n.mu.Unlock()
	status, _, gone := n.state()
	live := !gone && status != tools.StatusExited && pid > 0
	if live {
		// On the admin client: through the node's own, the reply would
		// wait behind the pane's queued output.
		if _, err := n.srv.adminClient().Run(ctx, tmuxctl.Command("set-option", "-p", "-t", n.pane, "remain-on-exit", "off")); err != nil {
			live = false
		}
	}
	// Our client leaves first: tmux 3.3a also crashed when the pane died
	// with our control client still attached. detach pauses the pane's
	// output for it before it goes (docs/TMUX-CRASHES.md).
	clientPid := o.clientPID(ctx, n)
	n.detach()
	if testHookClosed != nil {
		testHookClosed(n)
	}
	o.waitClientGone(ctx, n.srv, clientPid)
	ended := !live
	// Hang up like a closing terminal; kill what ignores that.
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGHUP, closeGrace}, {syscall.SIGKILL, closeTimeout}} {
		if ended {
			break
		}
		o.signalGroup(ctx, n, pid, step.sig)
		ended = o.waitSessionGone(ctx, n.srv, n.session(), step.wait)
	}
	if _, err := n.srv.adminClient().Run(ctx, tmuxctl.Command("kill-session", "-t", "="+n.session())); err != nil && !ended {
		o.log.Debug("kill-session", "node", id, "err", err)
	}
	n.markGone()
	o.mu.Lock()
	delete(o.nodes, id)
	o.mu.Unlock()
	o.removeFiles(id)
	o.gone(n)
	o.log.Info("closed node", "node", id)
	return nil
}

// testHookClosed, if set, runs in CloseNode after the node's screen was
// detached (tests widen the window between detach and the end of the
// close with it).
var testHookClosed func(n *node)

// waitClientGone waits (checking every closePoll, for at most closeGrace)
// until the tmux server no longer lists the control client with process
// id pid: the client process can exit before the server has let go of
// its state, and a pane destroyed in between crashes tmux 3.3a.
func (o *Orchestrator) waitClientGone(ctx context.Context, srv *tmuxServer, pid int) {
	want := strconv.Itoa(pid)
	deadline := time.Now().Add(closeGrace)
	for {
		out, err := srv.adminClient().Run(ctx, tmuxctl.Command("list-clients", "-F", "#{client_pid}"))
		if err != nil || !slices.Contains(out, want) || time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		time.Sleep(closePoll)
	}
}

// waitSessionGone checks every closePoll, for at most d, whether tmux has
// ended the session. (Nothing of ours is attached to it any more to be
// told, and this runs only while a terminal is being closed.)
func (o *Orchestrator) waitSessionGone(ctx context.Context, srv *tmuxServer, session string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if _, err := srv.adminClient().Run(ctx, tmuxctl.Command("has-session", "-t", "="+session)); err != nil {
			var ce *tmuxctl.CommandError
			return errors.As(err, &ce) // "can't find session": gone
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(closePoll)
	}
}

// CloseNode's waits: how long a program may take to exit after SIGHUP
// before it gets SIGKILL, and how long tmux may then take to end the
// session before CloseNode kills the session itself.
const (
	closeGrace   = time.Second
	closeTimeout = 5 * time.Second
	closePoll    = 20 * time.Millisecond
)

// detach ends the node's client and pump, leaving the session running.
func (n *node) detach() {
	if n.client == nil { // a node of a host not reached yet (remote.go)
		n.scr.Close()
		return
	}
	n.quitOnce.Do(func() {
		// tmux 3.3a can crash when a client leaves with the pane's output
		// queued for it: pause the pane for this client first.
		n.detaching.Store(true)
		if n.client.Err() == nil && !n.asleep.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			n.client.Pause(ctx, n.pane)
			cancel()
		}
		close(n.quit)
	})
	n.client.Close()
	<-n.done
	n.stopRecording()
	n.scr.Close()
}

// clientEnded is called by a node's pump when its control client ended.
func (o *Orchestrator) clientEnded(n *node) {
	o.mu.Lock()
	closing := o.closing
	o.mu.Unlock()
	if closing {
		return
	}
	select {
	case <-n.quit:
		return // closed on purpose
	default:
	}
	if o.remoteLost(n) {
		return // its host is unreachable: the host reconnects (host.go)
	}
	if reason, dead := o.serverDied(n.srv); dead {
		// Every node of the server is lost at once: keep each listed as
		// exited with the reason, so nobody wonders where it went.
		n.markLost("the tmux server died (" + reason + "): the program is gone; terminal_close removes the node")
		return
	}
	if !o.sessionGone(context.Background(), n.meta) {
		// Our client was detached (a human's `detach-client -s`, say) but
		// the session lives: mirror it again, never forget it.
		n.log.Warn("control client detached while the session lives; attaching again", "reason", n.client.Err())
		go o.reattach(n)
		return
	}
	n.log.Info("tmux session ended", "reason", n.client.Err())
	n.markGone()
	o.forget(n.meta.ID)
}

// reattach mirrors a node whose control client was detached from outside:
// a new incarnation of its mirror (epoch+1, so revisions never repeat)
// replaces the old one under the same id, with the same files and token.
// It runs in its own goroutine, started by clientEnded, and ends when the
// new mirror is attached or the attempt failed.
func (o *Orchestrator) reattach(old *node) {
	o.lifecycleMu.Lock()
	defer o.lifecycleMu.Unlock()
	if o.node(old.meta.ID) != old || old.isClosing() {
		return // closed or replaced meanwhile
	}
	<-old.done
	old.scr.Close()
	meta := old.meta
	meta.Recording = ""
	if rec := old.rec.Load(); rec != nil {
		// The new mirror goes on with the recording: a gap, then a frame.
		meta.Recording = rec.dir
		old.stopRecording()
	}
	meta.Epoch++
	if err := tools.WriteJSONAtomic(o.metaPath(meta.ID), meta); err != nil {
		o.log.Warn("reattach: write node metadata", "node", meta.ID, "err", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n := o.newNode(meta)
	if err := n.attach(ctx); err != nil {
		o.log.Warn("reattach failed: the node is reported exited", "node", meta.ID, "err", err)
		old.markLost("termsprawl's mirror of the session was detached and could not attach again: " + err.Error())
		return
	}
	o.mu.Lock()
	o.nodes[meta.ID] = n
	o.mu.Unlock()
	old.markGone() // waiters on the old mirror end; the node lives on in n
	o.log.Info("node attached again", "node", meta.ID)
}

// serverDied reports whether the private tmux server is gone (its admin
// client ended, or a round trip on it fails), and records the death once:
// an error in the log, counted in ServerHealth.
func (o *Orchestrator) serverDied(srv *tmuxServer) (string, bool) {
	admin := srv.adminClient()
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
			"socket", srv.socket, "err", err)
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
		n.stopRecording()
		go n.scr.Close()
		o.gone(n)
	}
}
