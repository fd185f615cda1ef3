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
// shard, control clients (ours) excluded, per session name. A shard's
// answer is kept while its admin client hears of no client change
// (hosts.Tmux.ClientsGen), so a list at 1,000 nodes (125 shards) asks
// only the shards whose clients changed; those are asked side by side
// (docs/PERFORMANCE.md, "200 nodes" and "1,000 nodes").
func (o *Orchestrator) humanClients(ctx context.Context) map[hosts.Server]map[string][]string {
	srvs := o.servers()
	found := make([]map[string][]string, len(srvs))
	var wg sync.WaitGroup
	for i, srv := range srvs {
		gen := srv.ClientsGen()
		if m, ok := o.clientsCache.get(srv, gen); ok {
			found[i] = m
			continue
		}
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
			o.clientsCache.put(srv, gen, m)
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

// clientsCache keeps each shard's last list of human clients with the
// shard's ClientsGen when it was asked (humanClients). Its maps are never
// changed once put.
type clientsCache struct {
	mu sync.Mutex // guards m
	m  map[*tmuxServer]cachedClients
}

type cachedClients struct {
	gen      uint64
	sessions map[string][]string
}

func (c *clientsCache) get(srv *tmuxServer, gen uint64) (map[string][]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[srv]
	return e.sessions, ok && e.gen == gen
}

// put keeps the answer taken at gen (the value read before the question
// was sent: a change meanwhile makes it stale at once).
func (c *clientsCache) put(srv *tmuxServer, gen uint64, sessions map[string][]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[*tmuxServer]cachedClients{}
	}
	if e, ok := c.m[srv]; ok && e.gen > gen {
		return // a newer answer is there already
	}
	c.m[srv] = cachedClients{gen: gen, sessions: sessions}
}

// forget drops a shard that is gone (reclaim).
func (c *clientsCache) forget(srv *tmuxServer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, srv)
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
