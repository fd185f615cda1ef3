package orchestrator

import (
	"os"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/tools"
)

// The engine's lifecycle bookkeeping without a global lock (CONTRACT
// §24): a launch reserves its id and node slot under idMu (a few map
// operations), takes only its server's lifecycle lock (tmuxServer.life)
// while it creates and attaches the session, registers the node, and
// watches for an early exit after it let go of every lock.

// errShuttingDown is the answer to a lifecycle change once Close began.
func errShuttingDown() error {
	return tools.Errorf(tools.KindUnavailable, "the orchestrator is shutting down")
}

// beginOp counts a launch, close or reattach under way, unless Close has
// begun (false). Close waits for every counted op (ops).
func (o *Orchestrator) beginOp() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closing {
		return false
	}
	o.ops.Add(1)
	return true
}

// reservation is a launch's claim on a node id and a node slot, held from
// before its files are written until the node is registered or the
// launch is rolled back.
type reservation struct {
	o  *Orchestrator
	id string
}

// reserve claims a free id for name (or the id fixed, a lost node's that
// a restore starts again) and a slot under MaxNodes, and counts the
// launch as an op. The shard is chosen later (pick).
func (o *Orchestrator) reserve(name, fixed string) (*reservation, error) {
	o.idMu.Lock()
	defer o.idMu.Unlock()
	o.mu.Lock()
	count, closing := len(o.nodes)+len(o.reserved), o.closing
	if !closing && count < o.cfg.MaxNodes {
		o.ops.Add(1)
	}
	o.mu.Unlock()
	if closing {
		return nil, errShuttingDown()
	}
	if count >= o.cfg.MaxNodes {
		return nil, tools.Errorf(tools.KindRejected, "node limit reached (%d): close terminals with terminal_close first", o.cfg.MaxNodes)
	}
	id := fixed
	if id == "" {
		id = o.allocateID(name)
	} else if _, ok := o.reserved[id]; ok || o.node(id) != nil {
		o.ops.Done()
		return nil, tools.Errorf(tools.KindConflict, "terminal %q is being launched or runs already", id)
	}
	o.reserved[id] = nil
	return &reservation{o: o, id: id}, nil
}

// on records the server the launch goes on (shardFor already did for a
// shard it picked).
func (r *reservation) on(srv hosts.Server) {
	r.o.idMu.Lock()
	r.o.reserved[r.id] = srv
	r.o.idMu.Unlock()
}

// release gives up the reservation (the launch failed or registered).
func (r *reservation) release() {
	r.o.idMu.Lock()
	delete(r.o.reserved, r.id)
	r.o.idMu.Unlock()
	r.o.mu.Lock()
	r.o.settleLaunch(r.id)
	r.o.mu.Unlock()
	r.o.ops.Done()
}

// register puts the launched node in the registry and ends the
// reservation (its slot is the node's now).
func (r *reservation) register(n *node.Node) {
	o := r.o
	o.idMu.Lock()
	o.mu.Lock()
	o.nodes[r.id] = n
	o.settleLaunch(r.id)
	o.mu.Unlock()
	delete(o.reserved, r.id)
	o.idMu.Unlock()
	o.ops.Done()
}

// allocateID picks a free node id from the name (or "term"): not a
// node's, not reserved by a launch under way, no metadata file. Call with
// idMu held.
func (o *Orchestrator) allocateID(name string) string {
	return tools.NodeIDFor(name, func(id string) bool {
		if _, ok := o.reserved[id]; ok || o.node(id) != nil {
			return true
		}
		_, err := os.Stat(o.metaPath(id))
		return err == nil
	})
}
