package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/hostnodes"
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
	if o.lost.Get(id) != nil && o.node(id) == nil {
		return o.Forget(id) // a lost node has nothing to end (lost.go)
	}
	if n := o.node(id); n != nil && n.ClosePending.Load() {
		return hostnodes.ClosePendingErr(n) // still waiting for its host (hostnodes)
	}
	n, err := o.lookupFor(id, true)
	if m := o.node(id); err != nil && m != nil && !m.IsClosing() && m.Meta.Host != "" && o.hosts.Down(m) {
		n, err = m, nil // its host is unreachable: the close waits for it (hostnodes)
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
	if err := statefile.WriteCloseMark(o.cfg.StateDir, id, statefile.IntentOf(ctx)); err != nil {
		o.log.Warn("record a close's intent", "node", id, "err", err)
	}
	if o.hosts.Down(n) {
		// Nothing can end it now: listed as closing until the host
		// answers (hostnodes), never forgotten.
		defer o.ops.Done()
		n.Detach()
		n.ClosePending.Store(true)
		return hostnodes.ClosePendingErr(n)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeDeadline)
	done := make(chan error, 1)
	go func() {
		defer o.ops.Done()
		defer cancel()
		err := o.closeNode(cctx, n)
		if err != nil && o.hosts.Down(n) {
			n.ClosePending.Store(true) // the host went away during the close
			err = hostnodes.ClosePendingErr(n)
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
		clientPid = hostnodes.ClientPID(ctx, n)
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
		if !hosts.EndSession(ctx, n.Srv, n.Session(), 0, o.log) {
			return tools.Errorf(tools.KindUnavailable, "close %s: its session did not end in time", id)
		}
	default:
		hosts.WaitClientGone(ctx, n.Srv, clientPid)
		if err := hosts.FinishSession(ctx, n.Srv, n.Session(), pid, live, o.log); err != nil {
			o.log.Error("close did not finish: the node is kept", "node", id, "err", err)
			return tools.Errorf(tools.KindUnavailable, "close %s: %w", id, err)
		}
	}
	o.forgetClosed(n)
	o.log.Info("closed node", "node", id)
	return nil
}

// forgetClosed ends a node whose close is confirmed: marked gone, out of
// the node map, its files removed, its end announced.
func (o *Orchestrator) forgetClosed(n *node.Node) {
	n.MarkGone()
	o.mu.Lock()
	delete(o.nodes, n.Meta.ID)
	o.mu.Unlock()
	o.removeFiles(n.Meta.ID)
	o.gone(n)
}

// CloseNode's waits: how long a program may take to exit after SIGHUP
// before it gets SIGKILL and how long tmux may then take to end the
// session (orchestrator/hosts' session ends), and the whole close's own
// deadline.
const (
	closeGrace    = hosts.CloseGrace
	closeTimeout  = hosts.CloseTimeout
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
	if o.hosts.ClientLost(n) {
		return // its host is unreachable: the host reconnects (hostnodes)
	}
	if reason, dead := o.serverDeaths.Died(n.Srv, o.log); dead {
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

// ServerHealth tells how often the private tmux server died while this
// orchestrator ran, and when and why it last did.
func (o *Orchestrator) ServerHealth() (deaths int, last string) { return o.serverDeaths.Health() }

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
