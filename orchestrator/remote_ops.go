package orchestrator

import (
	"context"
	"strconv"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Operations on nodes of hosts that differ from local ones: signals, the
// close sequence's client pid, attach, and what an agent there needs.

// remoteSignal is Signal for a node on a host.
func (o *Orchestrator) remoteSignal(n *node.Node, pid int, name string, sig syscall.Signal) (tools.SignalResult, error) {
	h := o.host(n.Meta.Host)
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

// clientPID is the pid, as the node's tmux server knows it, of the node's
// control client (for a host: the remote tmux client, not our ssh).
func (o *Orchestrator) clientPID(ctx context.Context, n *node.Node) int {
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

// remoteAttachArgv is AttachArgv for a node on a host; nil for others.
func (o *Orchestrator) remoteAttachArgv(id string) []string {
	m, ok := o.Meta(id)
	if !ok || m.Host == "" {
		return nil
	}
	h := o.host(m.Host)
	if h == nil {
		return nil
	}
	return tools.HostAttachArgv(h.Spec(), "ts-"+id, false)
}

// HostAgentConfig is what an agent launched on host needs: the remote
// termsprawlctl and the path of its MCP registration there (written now).
// Empty ctl: the host has no termsprawlctl.
func (o *Orchestrator) HostAgentConfig(ctx context.Context, host string) (ctl, mcpConfig string, err error) {
	h, _, err := o.hostFor(ctx, host)
	if err != nil {
		return "", "", err
	}
	return h.AgentConfig(ctx)
}

// HostCtlMissing is what an agent launched on host is told when the host
// has no termsprawlctl (TERMSPRAWL_CTL_MISSING in its environment): its
// node runs and is driven, but it cannot call termsprawl. Empty when the
// host has one, or is not known.
func (o *Orchestrator) HostCtlMissing(host string) string {
	h := o.host(host)
	if h == nil {
		return ""
	}
	return h.CtlMissing()
}
