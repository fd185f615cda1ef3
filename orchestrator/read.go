package orchestrator

import (
	"context"
	"strings"
	"sync"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// humanClients returns the tty names of the clients attached to each
// shard, control clients (ours) excluded, per session name. The shards
// are asked side by side: at 200 nodes (25 shards) one list-clients after
// the other made terminal_list wait for 25 round trips in a row
// (docs/PERFORMANCE.md, "200 nodes").
func (o *Orchestrator) humanClients(ctx context.Context) map[hosts.Server]map[string][]string {
	srvs := o.servers()
	found := make([]map[string][]string, len(srvs))
	var wg sync.WaitGroup
	for i, srv := range srvs {
		wg.Go(func() {
			if o.hooks.humanClients != nil {
				o.hooks.humanClients(len(srvs))
			}
			out, err := srv.Admin().Run(ctx, tmuxctl.Command("list-clients", "-F", "#{session_name} #{client_control_mode} #{client_name}"))
			if err != nil {
				return
			}
			m := map[string][]string{}
			for _, line := range out {
				f := strings.SplitN(line, " ", 3)
				if len(f) == 3 && f[1] != "1" {
					m[f[0]] = append(m[f[0]], f[2])
				}
			}
			found[i] = m
		})
	}
	wg.Wait()
	res := make(map[hosts.Server]map[string][]string, len(srvs))
	for i, srv := range srvs {
		if found[i] != nil {
			res[srv] = found[i]
		}
	}
	return res
}

// List returns every node.
func (o *Orchestrator) List(ctx context.Context) []tools.NodeInfo {
	clients := o.humanClients(ctx)
	nodes := o.sortedNodes()
	out := make([]tools.NodeInfo, 0, len(nodes))
	for _, n := range nodes {
		pending := n.ClosePending.Load()
		if n.IsClosing() && !pending {
			continue // being closed: gone for every new operation
		}
		info := n.Info(len(clients[n.Srv][n.Session()]))
		if pending {
			info.Status = tools.StatusClosing // until its host confirms (remote_close.go)
		}
		out = append(out, info)
	}
	for _, l := range o.lostSorted() {
		out = append(out, l.info()) // lost.go
	}
	return out
}

// Info returns one node's row.
func (o *Orchestrator) Info(ctx context.Context, id string) (tools.NodeInfo, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.NodeInfo{}, err
	}
	return n.Info(len(o.humanClients(ctx)[n.Srv][n.Session()])), nil
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
		if l := o.lostOne(id); l != nil && o.node(id) == nil {
			return l.snapshot(), nil // its last screen (lost.go)
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
