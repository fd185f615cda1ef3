package orchestrator

import (
	"context"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/tools"
)

// List returns every node.
func (o *Orchestrator) List(ctx context.Context) []tools.NodeInfo {
	clients := o.shards.HumanClients(ctx)
	nodes := o.sortedNodes()
	out := make([]tools.NodeInfo, 0, len(nodes))
	for _, n := range nodes {
		pending := n.ClosePending.Load()
		if n.IsClosing() && !pending {
			continue // being closed: gone for every new operation
		}
		info := n.Info(len(clients[n.Srv][n.Session()]))
		if pending {
			info.Status = tools.StatusClosing // until its host confirms (orchestrator/hostnodes)
		}
		out = append(out, info)
	}
	for _, l := range o.lostSorted() {
		out = append(out, l.Info(node.SandboxName(l.Meta.Sandbox))) // lost.go
	}
	return out
}

// Info returns one node's row.
func (o *Orchestrator) Info(ctx context.Context, id string) (tools.NodeInfo, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.NodeInfo{}, err
	}
	return n.Info(len(o.shards.HumanClients(ctx)[n.Srv][n.Session()])), nil
}

// Owner returns the node's owner and parent, for permission checks.
func (o *Orchestrator) Owner(id string) (owner string, ok bool) {
	n := o.node(id)
	if n == nil {
		return "", false
	}
	return n.Meta.Owner, true
}

// Snapshot returns the node's screen.
func (o *Orchestrator) Snapshot(ctx context.Context, id string) (tools.Snapshot, error) {
	n, err := o.lookup(id)
	if err != nil {
		if l := o.lost.Get(id); l != nil && o.node(id) == nil {
			return l.Snapshot(), nil // its last screen (lost.go)
		}
		return tools.Snapshot{}, err
	}
	n.Observe(ctx)
	status, code, _, reason := n.ExitState()
	return tools.Snapshot{Terminal: id, Screen: n.Snapshot(), Status: status, ExitCode: code, ExitReason: reason, Crash: n.CrashReport(), Semantic: n.Sem.Lines()}, nil
}

// CaptureSince returns the rows changed after revision cursor.
func (o *Orchestrator) CaptureSince(ctx context.Context, id string, cursor uint64) (tools.Changes, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.Changes{}, err
	}
	return n.CaptureSince(ctx, cursor)
}

// DefaultReadChars is terminal_read's default max_chars.
const DefaultReadChars = tools.DefaultReadChars

// WaitFor waits on a node.
func (o *Orchestrator) WaitFor(ctx context.Context, id string, spec tools.WaitSpec) (tools.WaitResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.WaitResult{}, err
	}
	return n.Wait(ctx, spec)
}

// Read returns the most recent output (history and screen, from tmux).
func (o *Orchestrator) Read(ctx context.Context, id string, maxChars int) (tools.ReadResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.ReadResult{}, err
	}
	return n.Read(ctx, maxChars)
}

// MaxScrollbackLines bounds terminal_scrollback's answer (the newest lines
// are kept).
const MaxScrollbackLines = node.MaxScrollbackLines

// Scrollback reads lines from tmux's history and screen. from and to use
// tmux's numbering (0 = first visible row, negative = history); nil means
// the start of history and the last visible row.
func (o *Orchestrator) Scrollback(ctx context.Context, id string, from, to *int, search string) (tools.ScrollbackResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.ScrollbackResult{}, err
	}
	return n.Scrollback(ctx, from, to, search)
}
