package hostnodes

import (
	"context"
	"strconv"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/node"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Operations on nodes of hosts that differ from local ones: their server,
// a lost connection, a session's end, signals, the close sequence's
// client pid, attach, and what an agent there needs.

// LastServer is the server a node of host is listed on: the connected
// one, else the last, else (never reached) one with no clients, so the
// node is listed with the host's socket. false: no such host.
func (r *Hosts) LastServer(host string) (hosts.Server, bool) {
	if h := r.host(host); h != nil {
		return h.LastServer(), true
	}
	return nil, false
}

// ClientLost is the engine's clientEnded hook: true when n's client ended
// because its host's connection is gone (the node is then unreachable and
// the host reconnects); false for a local node or a live connection.
func (r *Hosts) ClientLost(n *node.Node) bool {
	if n.Meta.Host == "" {
		return false
	}
	h := r.host(n.Meta.Host)
	if h == nil {
		return false
	}
	if h.Server() == n.Srv && h.Alive() {
		return false
	}
	n.SetStatus(tools.StatusUnreachable, nil)
	h.Kick()
	return true
}

// SessionGone is the engine's sessionGone for a node on a host: certain
// only when the host answers.
func (r *Hosts) SessionGone(ctx context.Context, m statefile.NodeMeta) bool {
	h := r.host(m.Host)
	if h == nil {
		return false
	}
	srv := h.Server()
	if srv == nil {
		return false
	}
	return hosts.SessionGone(ctx, srv, "ts-"+m.ID)
}

// Gone removes the remote copy of a gone node's session file (nothing
// for a local node, or a host not connected).
func (r *Hosts) Gone(n *node.Node) {
	if n.Meta.Host == "" {
		return
	}
	h := r.host(n.Meta.Host)
	if h == nil || h.Server() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.RemoveSession(ctx, n.Meta.ID); err != nil {
		r.log.Debug("remove remote session file", "node", n.Meta.ID, "err", err)
	}
}

// Signal is the engine's Signal for a node on a host.
func (r *Hosts) Signal(n *node.Node, pid int, name string, sig syscall.Signal) (tools.SignalResult, error) {
	h := r.host(n.Meta.Host)
	if h == nil {
		return tools.SignalResult{}, tools.Errorf(tools.KindUnavailable, "host %s is not configured", n.Meta.Host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.SignalGroup(ctx, pid, name, sig); err != nil {
		return tools.SignalResult{}, err
	}
	return tools.SignalResult{Terminal: n.Meta.ID, Signal: name, PID: pid}, nil
}

// ClientPID is the pid, as the node's tmux server knows it, of the node's
// control client (for a host: the remote tmux client, not our ssh).
func ClientPID(ctx context.Context, n *node.Node) int {
	if n.SharedClient() {
		return 0 // the server's mirror client stays: the node's window leaves it
	}
	if n.Meta.Host == "" {
		return n.Client.PID()
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	out, err := n.Client.Run(cctx, tmuxctl.Command("display-message", "-p", "#{client_pid}"))
	if err != nil || len(out) != 1 {
		return 0
	}
	pid, _ := strconv.Atoi(out[0])
	return pid
}

// AttachArgv is the engine's AttachArgv for a live node of meta on a
// host; nil for a local node or an unknown host.
func (r *Hosts) AttachArgv(m statefile.NodeMeta) []string {
	if m.Host == "" {
		return nil
	}
	h := r.host(m.Host)
	if h == nil {
		return nil
	}
	return tools.HostAttachArgv(h.Spec(), "ts-"+m.ID, false)
}

// AgentConfig is what an agent launched on host needs: the remote
// termsprawlctl and the path of its MCP registration there (written now).
// Empty ctl: the host has no termsprawlctl.
func (r *Hosts) AgentConfig(ctx context.Context, host string) (ctl, mcpConfig string, err error) {
	h, err := r.connected(ctx, host)
	if err != nil {
		return "", "", err
	}
	return h.AgentConfig(ctx)
}

// CtlMissing is what an agent launched on host is told when the host has
// no termsprawlctl; empty when the host has one, or is not known.
func (r *Hosts) CtlMissing(host string) string {
	h := r.host(host)
	if h == nil {
		return ""
	}
	return h.CtlMissing()
}
