package orchestrator

import (
	"context"
	"log/slog"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// The registry's view for the tool server: node metadata, not nodes.

// Logger returns the orchestrator's logger.
func (o *Orchestrator) Logger() *slog.Logger { return o.log }

// OnGone registers f, called once for each node whose life ends (closed,
// or its tmux session ended), after it left the registry. f must not
// block for long.
func (o *Orchestrator) OnGone(f func(NodeMeta)) {
	o.mu.Lock()
	o.onGone = f
	o.mu.Unlock()
}

// OnStatus sets f, told when a node's program status changes on its own
// (it exited, or its session ended), so the event streams' rows go out at
// once rather than at their next backstop re-read. f is called without
// the engine's locks and must not block.
func (o *Orchestrator) OnStatus(f func()) { o.onStatus.Store(&f) }

// statusChanged tells the OnStatus hook.
func (o *Orchestrator) statusChanged() {
	if f := o.onStatus.Load(); f != nil {
		(*f)()
	}
}

// OnBorn sets the function told when a node's session file, with its
// token, has been written: before its program starts, so the tool server
// knows the token by the time the program can use it. f must not block
// for long.
func (o *Orchestrator) OnBorn(f func(NodeMeta)) {
	o.mu.Lock()
	o.onBorn = f
	o.mu.Unlock()
}

// born tells the OnBorn hook about a node's session file.
func (o *Orchestrator) born(m NodeMeta) {
	o.mu.Lock()
	o.markLaunching(m.ID)
	f := o.onBorn
	o.mu.Unlock()
	if f != nil {
		f(m)
	}
}

// stillborn undoes a launch that failed after the node's files were
// written: the files go, and the OnGone hook forgets its token.
func (o *Orchestrator) stillborn(m NodeMeta) {
	o.removeFiles(m.ID)
	o.mu.Lock()
	o.settleLaunch(m.ID)
	f := o.onGone
	o.mu.Unlock()
	if f != nil {
		f(m)
	}
}

// gone tells the OnGone hook that n's life ended.
func (o *Orchestrator) gone(n *node.Node) {
	o.hosts.Gone(n)
	o.mu.Lock()
	f := o.onGone
	o.mu.Unlock()
	if f != nil {
		f(n.Meta)
	}
}

// Meta returns a live node's metadata.
func (o *Orchestrator) Meta(id string) (NodeMeta, bool) {
	n := o.node(id) // an unreachable node still has its metadata
	if n == nil || n.IsClosing() {
		return NodeMeta{}, false
	}
	return n.Meta, true
}

// Nodes returns the metadata of every live node, ordered by creation.
func (o *Orchestrator) Nodes() []NodeMeta {
	nodes := o.sortedNodes()
	out := make([]NodeMeta, len(nodes))
	for i, n := range nodes {
		out[i] = n.Meta
	}
	return out
}

// MirrorCounts sums, over the live nodes, how often a mirror was rebuilt
// from tmux and how often a quiet mirror differed from tmux and was healed.
func (o *Orchestrator) MirrorCounts() (reseeds, heals int) {
	for _, n := range o.sortedNodes() {
		n.Mu.Lock()
		reseeds += n.Reseeds
		heals += n.Healed
		n.Mu.Unlock()
	}
	return reseeds, heals
}

// PendingWait is a checked wait whose baseline is fixed: Run waits.
type PendingWait struct {
	After uint64
	n     *node.Node
	c     node.Compiled
}

// PrepareWait checks spec and fixes its baseline (spec.After, or the
// node's revision now) for a wait that may last up to lifetime (a watch).
func (o *Orchestrator) PrepareWait(id string, spec tools.WaitSpec, lifetime time.Duration) (*PendingWait, error) {
	n, err := o.lookup(id)
	if err != nil {
		return nil, err
	}
	c, err := node.CompileWait(spec)
	if err != nil {
		return nil, err
	}
	c.Timeout = lifetime
	if c.After == nil {
		rev := n.Scr.Revision()
		c.After = &rev
	}
	return &PendingWait{After: *c.After, n: n, c: c}, nil
}

// Run waits until the condition holds, the lifetime passes, the node goes
// or ctx ends.
func (p *PendingWait) Run(ctx context.Context) (tools.WaitResult, error) {
	return p.n.WaitCompiled(ctx, p.c)
}

// Resolve names a node the way every terminal argument does (CONTRACT
// §10): an exact id, else an exact name when unique, else a unique id
// prefix. Ambiguity is a usage error listing the candidates; no match is
// not_found, suggesting a near id or name.
func (o *Orchestrator) Resolve(word string) (string, error) {
	if n, err := o.lookup(word); err == nil {
		return n.Meta.ID, nil
	}
	var terms []tools.Named
	for _, n := range o.sortedNodes() {
		if !n.IsClosing() {
			terms = append(terms, tools.Named{ID: n.Meta.ID, Name: n.Meta.Name})
		}
	}
	for _, l := range o.lostSorted() { // lost nodes are named too (lost.go)
		terms = append(terms, tools.Named{ID: l.Meta.ID, Name: l.Meta.Name})
	}
	return tools.ResolveTerminal(word, terms)
}

// CurrentPath is the working directory of a node's program as tmux knows
// it (#{pane_current_path}); "" if it cannot be told.
func (o *Orchestrator) CurrentPath(ctx context.Context, id string) string {
	n, err := o.lookup(id)
	if err != nil {
		return ""
	}
	out, err := n.Cmd().Run(ctx, tmuxctl.Command("display-message", "-p", "-t", n.Pane, "#{pane_current_path}"))
	if err != nil || len(out) != 1 {
		return ""
	}
	return out[0]
}

// load counts, per server, its nodes and the launches under way that
// chose it, and says false once Close began: what the shards' placement
// and reclaim ask under their pick lock (hosts.Shards). Lock order
// hosts.Shards.pick → idMu → mu.
func (o *Orchestrator) load() (hosts.Load, bool) {
	o.idMu.Lock()
	defer o.idMu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	count := hosts.Load{}
	for _, s := range o.reserved {
		if s != nil {
			count[s]++
		}
	}
	for _, n := range o.nodes {
		count[n.Srv]++
	}
	return count, !o.closing
}

// shardFor picks the shard a new node goes on (hosts.Shards.Place) and
// records it in the reservation r.
func (o *Orchestrator) shardFor(ctx context.Context, r *reservation) (*tmuxServer, error) {
	return o.shards.Place(ctx, func() hosts.Load { c, _ := o.load(); return c }, func(s *tmuxServer) { r.on(s) })
}

// reclaimShards ends the shards but the first that hold no node and no
// launch under way (hosts.Shards.Reclaim): after a close, a node's end,
// a failed launch and adoption.
func (o *Orchestrator) reclaimShards(ctx context.Context) { o.shards.Reclaim(ctx, o.load) }
