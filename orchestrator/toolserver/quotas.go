package toolserver

import (
	"slices"
	"sync"

	"github.com/termsprawl/termsprawl/orchestrator/tables"
	"github.com/termsprawl/termsprawl/tools"
)

// Per-node quotas: one node cannot use up a table every node shares.
// Receipts have theirs in tools.MaxReceiptsPerCaller.
const (
	// maxWatchesPerNode bounds the live watches one node started (the
	// watch table's quotas are orchestrator/tables').
	maxWatchesPerNode = tables.MaxWatchesPerNode
	// maxDialogsPerNode bounds one node's pending dialogs.
	maxDialogsPerNode = tables.MaxDialogsPerNode
)

// maxTasksPerSender bounds the pending tasks one node sent (a variable so
// tests need not type 64 tasks to reach it).
var maxTasksPerSender = 64

// quotaErr is the rejected error naming the quota that a call ran into.
func quotaErr(quota string, limit int, format string, a ...any) error {
	return tools.Errorf(tools.KindRejected, "quota: "+format, a...).
		WithDetails("quota", quota).WithDetails("limit", limit)
}

// Node quotas: an agent cannot take every slot of --max-nodes. A node's
// launches, with its descendants' (nodes launched by nodes it launched),
// are at most nodesPerAgent(max) alive; and agents launch only while
// more than nodesReserve(max) slots are free, which the operator keeps
// for itself (it launches up to the limit itself).
func nodesPerAgent(maxNodes int) int { return max(1, maxNodes/4) }

func nodesReserve(maxNodes int) int { return max(1, maxNodes/16) }

// nodeQuota holds the launches of agents under way, so concurrent
// launches cannot pass the quota together.
type nodeQuota struct {
	mu      sync.Mutex
	pending map[string]int // launches under way per ancestor incarnation
	all     int            // launches by agents under way
}

// reserveNode takes a node slot for a launch by caller (an agent) whose
// chain (its own incarnation and its ancestors') is given; release
// returns it once the launch is done (the node, if any, then counts
// itself).
func (s *Server) reserveNode(caller tools.Identity, chain []string) (release func(), err error) {
	q := &s.nodeQuota
	limit, reserve := nodesPerAgent(s.maxNodes), nodesReserve(s.maxNodes)
	nodes := s.eng.nodes.Nodes()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending == nil {
		q.pending = map[string]int{}
	}
	if len(nodes)+q.all >= s.maxNodes-reserve {
		return nil, quotaErr("nodes", s.maxNodes-reserve, "%d of the %d node slots are taken: agents may not take the last %d, which the operator keeps (close terminals with terminal_close)", len(nodes)+q.all, s.maxNodes, reserve)
	}
	for _, inc := range chain {
		n := q.pending[inc]
		for _, m := range nodes {
			if slices.Contains(m.Ancestors, inc) {
				n++
			}
		}
		if n >= limit {
			who := "node " + caller.Node
			if inc != caller.Incarnation {
				who = "the node that launched " + caller.Node + " (or one above it)"
			}
			return nil, quotaErr("nodes", limit, "%s has %d terminals alive that it or its descendants launched, the most one agent may have (%d of --max-nodes %d): close some with terminal_close", who, n, limit, s.maxNodes)
		}
	}
	for _, inc := range chain {
		q.pending[inc]++
	}
	q.all++
	var once sync.Once
	return func() {
		once.Do(func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			q.all--
			for _, inc := range chain {
				if q.pending[inc]--; q.pending[inc] <= 0 {
					delete(q.pending, inc)
				}
			}
		})
	}, nil
}
