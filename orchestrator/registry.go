package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/launchenv"
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
	o.remoteGone(n)
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
	var byName, byPrefix, known []string
	for _, n := range o.sortedNodes() {
		if n.IsClosing() {
			continue
		}
		known = append(known, n.Meta.ID, n.Meta.Name)
		if n.Meta.Name == word {
			byName = append(byName, n.Meta.ID)
		}
		if strings.HasPrefix(n.Meta.ID, word) {
			byPrefix = append(byPrefix, n.Meta.ID)
		}
	}
	for _, l := range o.lostSorted() { // lost nodes are named too (lost.go)
		if l.meta.ID == word {
			return word, nil
		}
		known = append(known, l.meta.ID, l.meta.Name)
		if l.meta.Name == word {
			byName = append(byName, l.meta.ID)
		}
		if strings.HasPrefix(l.meta.ID, word) {
			byPrefix = append(byPrefix, l.meta.ID)
		}
	}
	for _, ids := range [][]string{byName, byPrefix} {
		switch {
		case len(ids) == 1:
			return ids[0], nil
		case len(ids) > 1:
			return "", tools.Errorf(tools.KindUsage, "%q names %d terminals (%s): use one of their ids", word, len(ids), strings.Join(ids, ", ")).
				WithDetails("candidates", ids)
		}
	}
	// A near id or name (CONTRACT §18: within two edits) is suggested.
	near := tools.Suggest(word, known, false)
	e := tools.Errorf(tools.KindNotFound, "no terminal %q%s: call terminal_list to see the terminals", word, tools.DidYouMean(near))
	if len(near) > 0 {
		e = e.WithDetails("suggestions", near)
	}
	return "", e
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

// servers returns the shards.
func (o *Orchestrator) servers() []*tmuxServer {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*tmuxServer(nil), o.shards...)
}

// server returns the shard of socket, or nil.
func (o *Orchestrator) server(socket string) *tmuxServer {
	for _, s := range o.servers() {
		if s.Socket() == socket {
			return s
		}
	}
	return nil
}

// shardSocket names the k-th shard's socket (k ≥ 1): the configured
// socket for the first, SOCKET-2, SOCKET-3, … after it.
func (o *Orchestrator) shardSocket(k int) string {
	if k <= 1 {
		return o.cfg.Socket
	}
	return fmt.Sprintf("%s-%d", o.cfg.Socket, k)
}

// serverLoadLocked counts, per server, its nodes and the launches under
// way that chose it. Call with idMu and mu held (and shardMu, so that the
// count stays true while the caller acts on it).
func (o *Orchestrator) serverLoadLocked() map[hosts.Server]int {
	count := map[hosts.Server]int{}
	for _, s := range o.reserved {
		if s != nil {
			count[s]++
		}
	}
	for _, n := range o.nodes {
		count[n.Srv]++
	}
	return count
}

// shardFor picks the shard a new node goes on: the first with room
// (counting the launches under way), else a new one, and records it in
// the reservation r. shardMu makes two launches see each other's choice.
func (o *Orchestrator) shardFor(ctx context.Context, r *reservation) (*tmuxServer, error) {
	o.shardMu.Lock()
	defer o.shardMu.Unlock()
	o.idMu.Lock()
	o.mu.Lock()
	count := o.serverLoadLocked()
	shards := append([]*tmuxServer(nil), o.shards...)
	o.mu.Unlock()
	o.idMu.Unlock()
	pick := func(s *tmuxServer) *tmuxServer {
		o.idMu.Lock()
		o.reserved[r.id] = s
		o.idMu.Unlock()
		return s
	}
	used := map[string]bool{}
	for _, s := range shards {
		used[s.Socket()] = true
		if count[s] < o.cfg.ShardSize {
			return pick(s), nil
		}
	}
	k := 1
	for used[o.shardSocket(k)] {
		k++
	}
	s, err := o.addShard(ctx, o.shardSocket(k))
	if err != nil {
		return nil, err
	}
	return pick(s), nil
}

// addShard starts (or connects to) the server of socket and adds it.
func (o *Orchestrator) addShard(ctx context.Context, socket string) (*tmuxServer, error) {
	s, err := hosts.StartLocal(ctx, o.cfg.Tmux, socket, o.cfg.StateDir, serverConf(o.cfg), launchenv.Tmux(), o.deaths, !o.cfg.ClientPerNode)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	o.shards = append(o.shards, s)
	o.mu.Unlock()
	o.log.Info("tmux shard started", "socket", socket)
	return s, nil
}
