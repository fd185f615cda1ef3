package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/screen"
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
		pending := n.closePending.Load()
		if n.isClosing() && !pending {
			continue // being closed: gone for every new operation
		}
		info := n.info(len(clients[n.srv][n.session()]))
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
	return n.info(len(o.humanClients(ctx)[n.srv][n.session()])), nil
}

// Owner returns the node's owner and parent, for permission checks.
func (o *Orchestrator) Owner(id string) (owner string, ok bool) {
	n := o.node(id)
	if n == nil {
		return "", false
	}
	return n.meta.Owner, true
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
	n.observe(ctx)
	status, code, _, reason := n.exitState()
	return tools.Snapshot{Terminal: id, Screen: n.snapshot(), Status: status, ExitCode: code, ExitReason: reason, Crash: n.crashReport(), Semantic: n.sem.Lines()}, nil
}

// CaptureSince returns the rows changed after revision cursor.
func (o *Orchestrator) CaptureSince(ctx context.Context, id string, cursor uint64) (tools.Changes, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.Changes{}, err
	}
	n.observe(ctx)
	ch, err := n.changesWithLogs(cursor)
	if err != nil {
		return tools.Changes{}, revisionErr(id, "cursor", cursor, err)
	}
	ch.Semantic = n.sem.Changes(cursor)
	return ch, nil
}

// revisionErr turns the mirror's revision error into the contract's: a
// revision older than the kept history (or from an earlier life of the
// orchestrator: revisions never repeat) is conflict/history-truncated, one
// newer than any handed out a usage error.
func revisionErr(id, arg string, rev uint64, err error) error {
	if errors.Is(err, screen.ErrHistoryTruncated) {
		e := tools.Errorf(tools.KindConflict, "history-truncated: revision %d of %q is older than the kept history; call terminal_snapshot and continue from its revision: %w", rev, id, err).
			WithDetails("reason", "history-truncated")
		// The oldest revision still answerable: a reader that wants
		// what is kept (the dashboard's logs tab) asks again from it.
		if re := (*screen.RevisionError)(nil); errors.As(err, &re) {
			e = e.WithDetails("oldest", re.Oldest)
		}
		return e
	}
	return tools.Errorf(tools.KindUsage, "%s %d of %q: %w; pass a revision this terminal returned", arg, rev, id, err)
}

// DefaultReadChars is terminal_read's default max_chars.
const DefaultReadChars = tools.DefaultReadChars

// Read returns the most recent output (history and screen, from tmux).
func (o *Orchestrator) Read(ctx context.Context, id string, maxChars int) (tools.ReadResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.ReadResult{}, err
	}
	if maxChars <= 0 {
		maxChars = DefaultReadChars
	}
	rev := n.scr.Revision()
	lines, err := n.cmd().Run(ctx, tmuxctl.Command("capture-pane", "-p", "-J", "-S", "-2000", "-t", n.pane))
	if err != nil {
		return tools.ReadResult{}, n.tmuxErr("read", err)
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	text := strings.Join(lines, "\n")
	r := []rune(text)
	res := tools.ReadResult{Terminal: id, Revision: rev}
	if len(r) > maxChars {
		r = r[len(r)-maxChars:]
		res.Truncated = true
	}
	res.Text = string(r)
	return res, nil
}

// MaxScrollbackLines bounds terminal_scrollback's answer (the newest lines
// are kept).
const MaxScrollbackLines = 2000

// Scrollback reads lines from tmux's history and screen. from and to use
// tmux's numbering (0 = first visible row, negative = history); nil means
// the start of history and the last visible row.
func (o *Orchestrator) Scrollback(ctx context.Context, id string, from, to *int, search string) (tools.ScrollbackResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.ScrollbackResult{}, err
	}
	out, err := n.cmd().Run(ctx, tmuxctl.Command("display-message", "-p", "-t", n.pane, "#{history_size} #{pane_height}"))
	if err != nil || len(out) != 1 {
		return tools.ScrollbackResult{}, n.tmuxErr("scrollback", err)
	}
	var hist, height int
	fmt.Sscanf(out[0], "%d %d", &hist, &height)
	start, end := -hist, height-1
	if from != nil {
		start = max(*from, -hist)
	}
	if to != nil {
		end = min(*to, height-1)
	}
	if from != nil && to != nil && *from > *to {
		return tools.ScrollbackResult{}, usage("from %d is after to %d (history has %d lines, the screen %d rows)", *from, *to, hist, height)
	}
	res := tools.ScrollbackResult{Terminal: id, HistorySize: hist, Lines: []tools.ScrollbackLine{}}
	if start > end {
		return res, nil // the range holds no line (e.g. no history yet)
	}
	lines, err := n.cmd().Run(ctx, tmuxctl.Command("capture-pane", "-p", "-S", strconv.Itoa(start), "-E", strconv.Itoa(end), "-t", n.pane))
	if err != nil {
		return tools.ScrollbackResult{}, n.tmuxErr("scrollback", err)
	}
	for i, l := range lines {
		l = strings.TrimRight(l, " ")
		if search != "" && !strings.Contains(l, search) {
			continue
		}
		res.Lines = append(res.Lines, tools.ScrollbackLine{Line: start + i, Text: l})
	}
	if len(res.Lines) > MaxScrollbackLines {
		res.Lines = res.Lines[len(res.Lines)-MaxScrollbackLines:]
		res.Truncated = true
	}
	return res, nil
}

// WaitFor waits on a node.
func (o *Orchestrator) WaitFor(ctx context.Context, id string, spec tools.WaitSpec) (tools.WaitResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.WaitResult{}, err
	}
	r, err := n.waitFor(ctx, spec)
	if err != nil {
		return r, err
	}
	if r.TimedOut {
		return r, timeoutError(id, r)
	}
	return r, nil
}
