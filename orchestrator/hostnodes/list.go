package hostnodes

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/node"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// The hosts as the operator sees and removes them (CONTRACT §23):
// host_list and host_remove.

// List reports every host: its state, node count, a round trip measured
// now (connected hosts, all at once) and since when the state holds.
func (r *Hosts) List(ctx context.Context) []tools.HostInfo {
	names := r.set.Names()
	out := make([]tools.HostInfo, len(names))
	counts := map[string]int{}
	for _, n := range r.e.Nodes() {
		if _, _, gone := n.State(); n.Meta.Host != "" && !gone {
			counts[n.Meta.Host]++
		}
	}
	var wg sync.WaitGroup
	for i, name := range names {
		h := r.set.Get(name)
		wg.Go(func() { out[i] = h.Info(ctx, counts[name]) })
	}
	wg.Wait()
	return out
}

// Remove stops driving host name and removes it from hosts.json. While
// it has live nodes it is refused unless closeNodes: then each node is
// closed while the host answers (intent is their close marks'); the nodes
// of a host that cannot be reached are forgotten here (their programs may
// run on there: said so).
func (r *Hosts) Remove(ctx context.Context, name string, closeNodes bool, intent statefile.Intent) (tools.HostRemoved, error) {
	res := tools.HostRemoved{Host: name, Closed: []string{}, Forgotten: []string{}}
	h := r.host(name)
	if h == nil {
		return res, r.set.Unknown(name, "")
	}
	var mine, live []*node.Node
	for _, n := range r.e.Nodes() {
		if n.Meta.Host != name {
			continue
		}
		status, _, gone := n.State()
		if gone {
			continue
		}
		mine = append(mine, n)
		if status != tools.StatusExited {
			live = append(live, n)
		}
	}
	if len(live) > 0 && !closeNodes {
		ids := make([]string, len(live))
		for i, n := range live {
			ids[i] = n.Meta.ID
		}
		return res, tools.Errorf(tools.KindRejected, "host %s has %d live nodes (%s): close them first, or remove the host with close_nodes (termsprawl hosts rm %s --close-nodes)", name, len(live), strings.Join(ids, ", "), name).
			WithDetails("host", name).WithDetails("nodes", ids)
	}
	// Close what the host lets us close, while it is connected, all
	// together (closeNodes: 64 closes one after another took over 45 s,
	// each waiting for its program's hang-up).
	var forget []*node.Node
	var closable []*node.Node
	for _, n := range mine {
		if h.Server() == nil || n.Reachable() != nil {
			forget = append(forget, n)
			continue
		}
		closable = append(closable, n)
	}
	if len(closable) > 0 {
		if err := r.e.BeginOp(); err != nil {
			return res, err
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.CloseDeadline)
		closed, failed := r.closeNodes(cctx, h.Server(), closable, intent)
		cancel()
		r.e.OpDone()
		res.Closed = append(res.Closed, closed...)
		for _, n := range closable {
			switch err := failed[n.Meta.ID]; {
			case err == nil:
			case errors.Is(err, hosts.ErrUnreachable) || h.Server() == nil:
				forget = append(forget, n)
			default:
				return res, fmt.Errorf("remove host %s: %w", name, err)
			}
		}
	}
	// No more adoption: the supervisor stops and the connection ends.
	r.set.Remove(name)
	h.Shutdown()
	for _, n := range forget {
		if r.e.Node(n.Meta.ID) != n {
			continue
		}
		n.MarkGone()
		r.e.Forget(n.Meta.ID)
		res.Forgotten = append(res.Forgotten, n.Meta.ID)
		r.log.Warn("node of a removed host forgotten: the host could not be reached, its program may still run there", "node", n.Meta.ID, "host", name)
	}
	sort.Strings(res.Forgotten)
	if err := hosts.RemoveFromFile(r.cfg.StateDir, name); err != nil {
		return res, err
	}
	res.Note = fmt.Sprintf("host %s removed from %s", name, tools.HostsFile)
	if len(res.Closed) > 0 {
		res.Note += fmt.Sprintf("; %d nodes closed", len(res.Closed))
	}
	if len(res.Forgotten) > 0 {
		res.Note += fmt.Sprintf("; %d nodes forgotten here without being ended, as the host could not be reached (%s): their programs may still run there (tmux -L %s on %s)",
			len(res.Forgotten), strings.Join(res.Forgotten, ", "), h.Spec().RemoteSocket(), h.Spec().Dest)
	}
	return res, nil
}
