package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"syscall"

	"github.com/termsprawl/termsprawl/orchestrator/launchenv"
	"github.com/termsprawl/termsprawl/tools"
)

// Resize sets the node's window size; the mirror follows tmux's layout
// change and reseeds. It returns once the mirror has the new size (or
// after a short bound).
func (o *Orchestrator) Resize(ctx context.Context, id string, columns, rows int) (tools.Snapshot, error) {
	if err := checkSize(columns, rows); err != nil {
		return tools.Snapshot{}, err
	}
	n, err := o.lookup(id)
	if err != nil {
		return tools.Snapshot{}, err
	}
	if err := n.Resize(ctx, columns, rows); err != nil {
		return tools.Snapshot{}, err
	}
	return o.Snapshot(ctx, id)
}

var signals = map[string]syscall.Signal{"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "HUP": syscall.SIGHUP}

// Signal sends a signal to the node's program (its process group).
func (o *Orchestrator) Signal(id, sig string) (tools.SignalResult, error) {
	s, ok := signals[strings.ToUpper(strings.TrimPrefix(strings.ToUpper(sig), "SIG"))]
	if !ok {
		return tools.SignalResult{}, usage("unknown signal %q: use INT, TERM, KILL or HUP", sig)
	}
	n, err := o.lookup(id)
	if err != nil {
		return tools.SignalResult{}, err
	}
	pid := n.Pid()
	if status, _, _ := n.State(); status == tools.StatusExited || pid <= 0 {
		return tools.SignalResult{}, tools.Errorf(tools.KindNotRun, "terminal %q has no running program to signal", id)
	}
	if n.Meta.Host != "" {
		return o.hosts.Signal(n, pid, strings.ToUpper(sig), s)
	}
	// The pane's program leads its own process group (tmux made it a
	// session leader): signal the group, falling back to the process.
	if err := syscall.Kill(-pid, s); err != nil {
		if err := syscall.Kill(pid, s); err != nil {
			return tools.SignalResult{}, tools.Errorf(tools.KindRejected, "signal %s to pid %d: %w", sig, pid, err)
		}
	}
	return tools.SignalResult{Terminal: id, Signal: strings.ToUpper(sig), PID: pid}, nil
}

// Focus switches every human client attached to this server to the node.
func (o *Orchestrator) Focus(ctx context.Context, id string) (tools.FocusResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.FocusResult{}, err
	}
	// A client can switch only to a session of its own server: humans on
	// other shards are told how to reach the node instead.
	switched, elsewhere := o.shards.Switch(ctx, n.Srv, n.Session())
	res := tools.FocusResult{Terminal: id, Clients: len(switched)}
	switch {
	case len(switched) == 0 && elsewhere > 0:
		res.Hint = fmt.Sprintf("%d human clients are attached to other tmux servers (nodes are spread over shards): use terminal_external or `termsprawl attach %s`", elsewhere, id)
	case len(switched) == 0:
		res.Hint = "no human is attached to this server: use terminal_external or `termsprawl attach " + id + "`"
	}
	return res, nil
}

// AttachArgv is the command that attaches a terminal to the node.
func (o *Orchestrator) AttachArgv(id string) []string {
	m, ok := o.Meta(id)
	if argv := o.hosts.AttachArgv(m); argv != nil {
		return argv // a node on a host
	}
	socket := o.cfg.Socket
	if ok && m.Socket != "" {
		socket = m.Socket
	}
	return []string{o.cfg.Tmux, "-L", socket, "attach-session", "-t", "ts-" + id}
}

// ExternalArgv returns the emulator argv that attaches to the node, from
// the preferences file or the first known emulator on PATH
// (launchenv.Emulator).
func (o *Orchestrator) ExternalArgv(id string) ([]string, error) {
	return launchenv.Emulator(o.cfg.StateDir, id, o.AttachArgv(id))
}

// External opens a new terminal window attached to the node: spawned
// detached, stdio ignored, TMUX and TMUX_PANE removed.
func (o *Orchestrator) External(id string) (tools.ExternalResult, error) {
	if _, err := o.lookup(id); err != nil {
		return tools.ExternalResult{}, err
	}
	argv, err := o.ExternalArgv(id)
	if err != nil {
		return tools.ExternalResult{}, err
	}
	pid, err := launchenv.StartWindow(id, argv)
	if err != nil {
		return tools.ExternalResult{}, err
	}
	return tools.ExternalResult{Terminal: id, Argv: argv, PID: pid}, nil
}
