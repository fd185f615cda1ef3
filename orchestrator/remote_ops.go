package orchestrator

import (
	"context"
	"strconv"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
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
	s, p := strconv.Itoa(int(sig)), strconv.Itoa(pid)
	if _, err := h.Exec(ctx, "kill -"+s+" -- -"+p+" 2>/dev/null || kill -"+s+" "+p, nil); err != nil {
		if exitCode(err) > 0 {
			return tools.SignalResult{}, tools.Errorf(tools.KindRejected, "signal %s to pid %d on host %s: %w", name, pid, n.Meta.Host, err)
		}
		return tools.SignalResult{}, o.remoteErr(h, err)
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
	p, rdir := h.Probe()
	ctl = p.Ctl
	if ctl == "" {
		return "", "", nil
	}
	reg := map[string]any{"mcpServers": map[string]any{"termsprawl": map[string]any{"command": ctl, "args": []string{"mcp"}}}}
	b, err := jsonBytes(reg)
	if err != nil {
		return "", "", err
	}
	if _, err := h.Exec(ctx, hosts.WriteFileScript(rdir, "agent-tools/mcp.json"), b); err != nil {
		return "", "", tools.Errorf(tools.KindUnavailable, "host %s: write the MCP registration: %w", host, err)
	}
	return ctl, rdir + "/agent-tools/mcp.json", nil
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
	if p, _ := h.Probe(); p.Ctl != "" || p.Tmux == "" {
		return ""
	}
	return "termsprawlctl is not installed on host " + host + " (not on its PATH, nor given with --host-ctl " + host + "=PATH): this terminal runs and is driven from termsprawl, but cannot call termsprawl itself; install termsprawlctl there to give it the tools"
}
