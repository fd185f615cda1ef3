package orchestrator

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Operations on nodes of hosts that differ from local ones: signals, the
// close sequence's client pid, attach, and what an agent there needs.

// signalGroup signals the pane's process group, then the process (the
// close sequence): here with kill(2), on a host with kill(1).
func (o *Orchestrator) signalGroup(ctx context.Context, host string, pid int, sig syscall.Signal) {
	if pid <= 0 {
		return
	}
	if host == "" {
		syscall.Kill(-pid, sig)
		syscall.Kill(pid, sig)
		return
	}
	if h := o.host(host); h != nil {
		s := strconv.Itoa(int(sig))
		h.exec(ctx, "kill -"+s+" -- -"+strconv.Itoa(pid)+" 2>/dev/null; kill -"+s+" "+strconv.Itoa(pid)+" 2>/dev/null; true", nil)
	}
}

// pidGone reports whether process pid has ended on its machine (host ""
// is this one): no such process, or a zombie. A host's pid is looked up
// on the host (CONTRACT §23), never in this machine's /proc.
func (o *Orchestrator) pidGone(ctx context.Context, host string, pid int) bool {
	if host == "" {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		_, zombie := zombieWait(pid)
		return zombie
	}
	h := o.host(host)
	if h == nil {
		return false
	}
	p := strconv.Itoa(pid)
	// A zombie (state Z after the name in /proc/PID/stat) has ended too.
	script := `if kill -0 ` + p + ` 2>/dev/null; then case $(cat /proc/` + p + `/stat 2>/dev/null) in *") Z "*) echo gone;; *) echo alive;; esac; else echo gone; fi`
	out, err := h.exec(ctx, script, nil)
	return err == nil && strings.TrimSpace(string(out)) == "gone"
}

// remoteSignal is Signal for a node on a host.
func (o *Orchestrator) remoteSignal(n *node, pid int, name string, sig syscall.Signal) (tools.SignalResult, error) {
	h := o.host(n.meta.Host)
	if h == nil {
		return tools.SignalResult{}, tools.Errorf(tools.KindUnavailable, "host %s is not configured", n.meta.Host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, p := strconv.Itoa(int(sig)), strconv.Itoa(pid)
	if _, err := h.exec(ctx, "kill -"+s+" -- -"+p+" 2>/dev/null || kill -"+s+" "+p, nil); err != nil {
		if exitCode(err) > 0 {
			return tools.SignalResult{}, tools.Errorf(tools.KindRejected, "signal %s to pid %d on host %s: %w", name, pid, n.meta.Host, err)
		}
		return tools.SignalResult{}, o.remoteErr(h, err)
	}
	return tools.SignalResult{Terminal: n.meta.ID, Signal: name, PID: pid}, nil
}

// clientPID is the pid, as the node's tmux server knows it, of the node's
// control client (for a host: the remote tmux client, not our ssh).
func (o *Orchestrator) clientPID(ctx context.Context, n *node) int {
	if n.meta.Host == "" {
		return n.client.PID()
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	out, err := n.client.Run(cctx, tmuxctl.Command("display-message", "-p", "#{client_pid}"))
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
	return tools.HostAttachArgv(h.spec, "ts-"+id, false)
}

// HostAgentConfig is what an agent launched on host needs: the remote
// termsprawlctl and the path of its MCP registration there (written now).
// Empty ctl: the host has no termsprawlctl.
func (o *Orchestrator) HostAgentConfig(ctx context.Context, host string) (ctl, mcpConfig string, err error) {
	h, _, err := o.hostFor(ctx, host)
	if err != nil {
		return "", "", err
	}
	h.mu.Lock()
	ctl, rdir := h.probe.ctl, h.rdir
	h.mu.Unlock()
	if ctl == "" {
		return "", "", nil
	}
	reg := map[string]any{"mcpServers": map[string]any{"termsprawl": map[string]any{"command": ctl, "args": []string{"mcp"}}}}
	b, err := jsonBytes(reg)
	if err != nil {
		return "", "", err
	}
	if _, err := h.exec(ctx, writeFileScript(rdir, "agent-tools/mcp.json"), b); err != nil {
		return "", "", tools.Errorf(tools.KindUnavailable, "host %s: write the MCP registration: %w", host, err)
	}
	return ctl, rdir + "/agent-tools/mcp.json", nil
}
