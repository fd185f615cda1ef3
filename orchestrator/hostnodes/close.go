package hostnodes

import (
	"context"
	"fmt"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/node"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Closes that wait for their host (CONTRACT §31). A close issued while a
// node's host is unreachable — or that loses the host half-way — cannot
// end the program there, and forgetting the node would lose a program
// that still runs. So the node stays listed, status closing, gone for
// every other operation; the close answers unavailable (wrapping
// hosts.ErrUnreachable, details closing: true) saying so; and every time
// the host is connected again (adoptSessions) its pending closes finish
// there: hang up, kill, confirm the session and the program gone, then
// forget the node. Its close mark (the engine's interrupted.go) finishes
// it after a restart too.

// Down reports whether n is on a host that cannot be reached now.
func (r *Hosts) Down(n *node.Node) bool {
	if n.Meta.Host == "" {
		return false
	}
	h := r.host(n.Meta.Host)
	if h == nil {
		return false // removed: Remove decides what becomes of it
	}
	srv := h.Server()
	if srv == nil || !h.Alive() {
		return true
	}
	status, _, _ := n.State()
	return status == tools.StatusUnreachable
}

// ClosePendingErr is a pending close's answer.
func ClosePendingErr(n *node.Node) error {
	e := tools.Errorf(tools.KindUnavailable, "terminal %q is on host %s, which is unreachable now: it stays listed as closing, and its program (which may still run there) is ended when the host answers again (%w)",
		n.Meta.ID, n.Meta.Host, hosts.ErrUnreachable).
		WithDetails("host", n.Meta.Host).WithDetails("closing", true)
	e.Retryable = true
	return e
}

// finishPendingCloses ends, on the host's new server, the nodes whose
// close waited for it, each in its own goroutine counted in the engine's
// ops.
func (r *Hosts) finishPendingCloses(host string, srv hosts.Server) {
	for _, n := range r.e.Nodes() {
		if n.Meta.Host != host || !n.ClosePending.Load() || r.e.BeginOp() != nil {
			continue
		}
		go func() {
			defer r.e.OpDone()
			if err := r.finishPendingClose(n, srv); err != nil {
				r.log.Warn("a close waiting for its host did not finish: still closing", "node", n.Meta.ID, "host", host, "err", err)
			}
		}()
	}
}

// finishPendingClose is a close's end for a node whose mirror is already
// detached, on srv.
func (r *Hosts) finishPendingClose(n *node.Node, srv hosts.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.CloseDeadline)
	defer cancel()
	srv.Life().Lock()
	defer srv.Life().Unlock()
	if r.e.Node(n.Meta.ID) != n || !n.ClosePending.Load() {
		return nil // finished meanwhile
	}
	pid := n.Pid()
	session := n.Session()
	srv.Admin().Run(ctx, tmuxctl.Command("set-option", "-p", "-t", "="+session+":", "remain-on-exit", "off"))
	if err := hosts.FinishSession(ctx, srv, session, pid, pid > 0, r.log); err != nil {
		return fmt.Errorf("close %s: %w", n.Meta.ID, err)
	}
	n.ClosePending.Store(false)
	r.e.ForgetClosed(n)
	r.log.Info("closed node once its host answered", "node", n.Meta.ID, "host", n.Meta.Host)
	return nil
}

// closeNodes closes nodes of one host's server together (hosts rm
// --close-nodes): a close holds the server's lifecycle lock throughout,
// so 64 closes one after another waited for each other's hang-up grace
// (45 s and more). Here the lock is taken once, the nodes detach, their
// sessions end together (hosts.EndTogether) and each node whose session
// and program are confirmed gone is forgotten. intent is the close marks'.
// It returns the ids closed and, for the others, why not.
func (r *Hosts) closeNodes(ctx context.Context, srv hosts.Server, nodes []*node.Node, intent statefile.Intent) ([]string, map[string]error) {
	failed := map[string]error{}
	var mine []*node.Node
	for _, n := range nodes {
		if !n.BeginClose() {
			failed[n.Meta.ID] = tools.Errorf(tools.KindNotFound, "no terminal %q: another close took it", n.Meta.ID)
			continue
		}
		if err := statefile.WriteCloseMark(r.cfg.StateDir, n.Meta.ID, intent); err != nil {
			r.log.Warn("record a close's intent", "node", n.Meta.ID, "err", err)
		}
		mine = append(mine, n)
	}
	srv.Life().Lock()
	defer srv.Life().Unlock()
	ends := make([]hosts.Ending, len(mine))
	for i, n := range mine {
		ends[i].Session = n.Session()
		pid := n.Pid()
		if status, _, gone := n.State(); !gone && status != tools.StatusExited && pid > 0 {
			ends[i].Pid = pid
			srv.Admin().Run(ctx, tmuxctl.Command("set-option", "-p", "-t", n.Pane, "remain-on-exit", "off"))
		}
		n.Detach()
	}
	errs := hosts.EndTogether(ctx, srv, ends)
	var closed []string
	for i, n := range mine {
		id := n.Meta.ID
		if errs[i] != nil {
			failed[id] = fmt.Errorf("close %s: %w", id, errs[i])
			n.ClosePending.Store(true) // listed as closing, never forgotten
			continue
		}
		r.e.ForgetClosed(n)
		closed = append(closed, id)
	}
	return closed, failed
}
