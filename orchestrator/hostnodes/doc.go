// Package hostnodes is the engine's room for the nodes on hosts: the
// machines driven over ssh (CONTRACT §17). It owns the host table (a
// hosts.Set of hosts.SSH connections), its start (connect, adopt, or list
// the nodes as unreachable until the host answers), adoption after every
// (re)connect, marking a lost host's nodes unreachable, the closes that
// wait for their host (CONTRACT §31), host_list and host_remove (CONTRACT
// §23), and what differs for a node on a host: signals, attach, a close's
// client pid, an agent's files there. The connection itself (ssh master,
// probe, supervisor, reconnects) is orchestrator/hosts'; the node map, the
// node files and launches are the engine's, which this room reaches only
// through its Engine interface (as a node reaches it through node.Env).
//
// Goroutines. This room starts two kinds, and no other:
//   - at Start, one per host for its first connection and adoption;
//     Start waits for all of them (each bounded by hosts.ConnectTimeout)
//     and each starts its host's supervisor (hosts.SSH.Start) as it ends;
//   - finishPendingCloses, after an adoption, one per node whose close
//     waited for the host: counted in the engine's ops (BeginOp, OpDone),
//     so the engine's Close waits for it; it ends when the close is done
//     or failed, within Config.CloseDeadline.
//
// The supervisors (orchestrator/hosts) call back into this room: adopt
// after each connection, mark the nodes unreachable on a loss, and the
// test seams of Config. They stop at Set().StopAll (the engine's Close,
// first) or when a host is removed.
//
// Locks. The room has no lock of its own: the host table is under the
// hosts.Set's, each host's server under its lifecycle lock
// (hosts.Server.Life). Adoption and the closes hold the host server's
// lifecycle lock while they call the Engine's map and file methods; those
// take the engine's node-map lock for a few map operations and never call
// back into this room, so the order is life → the engine's map lock.
// Engine.Reattach takes the lifecycle lock itself: it is called with no
// lock held.
package hostnodes

import (
	"context"
	"log/slog"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/node"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// Engine is the engine as the nodes on hosts see it: its node map, the
// node files in the state dir, and the count of operations its Close
// waits for. No method calls back into this room.
type Engine interface {
	// Nodes returns the nodes of the map, ordered by creation.
	Nodes() []*node.Node
	// Node returns the node of id in the map, or nil.
	Node(id string) *node.Node
	// Register puts n in the map under its id.
	Register(n *node.Node)
	// Unregister takes id out of the map; its files stay.
	Unregister(id string)
	// Forget takes id out of the map with its files and announces its
	// end (the session is gone).
	Forget(id string)
	// ForgetClosed ends n, whose close is confirmed: marked gone, out of
	// the map, its files removed, its end announced.
	ForgetClosed(n *node.Node)
	// RemoveFiles removes the files of id in the state dir.
	RemoveFiles(id string)
	// NewNode makes a node of meta, not attached, not registered.
	NewNode(meta statefile.NodeMeta) *node.Node
	// WriteSessionFile writes the node's session file (a new token) and
	// tells the engine's OnBorn hook.
	WriteSessionFile(meta statefile.NodeMeta) error
	// ListUnreachable registers a placeholder for a node with no mirror:
	// a blank screen from revision base, status unreachable with reason.
	ListUnreachable(meta statefile.NodeMeta, base uint64, reason string)
	// LiveSessions lists the node ids whose sessions srv runs (an answer
	// that lists the admin session, else an error).
	LiveSessions(ctx context.Context, srv hosts.Server) (map[string]bool, error)
	// Reattach mirrors again a node whose session lives on a server it
	// is not mirrored from (a new mirror life under the same id). It
	// takes the server's lifecycle lock: call it with none held.
	Reattach(n *node.Node)
	// BeginOp counts an operation the engine's Close waits for, or says
	// why not (it is shutting down); OpDone ends one counted.
	BeginOp() error
	OpDone()
}

// Config is what the engine hands the room.
type Config struct {
	StateDir string
	Log      *slog.Logger
	// Deaths is the engine's channel of pane deaths (hosts.SSHConfig).
	Deaths chan struct{}
	// CloseDeadline is a close's own deadline (the engine's).
	CloseDeadline time.Duration
	Engine        Engine
	// Lost runs when a host was marked unreachable, before its
	// supervisor reconnects; Adopted after a (re)connect's sessions are
	// mirrored again; Connect at the start of every connection attempt.
	// The engine's test seams: nil outside its tests.
	Lost, Adopted, Connect func(host string)
}

// Hosts is the room: the host table and the nodes on hosts.
type Hosts struct {
	cfg Config
	e   Engine
	log *slog.Logger
	set *hosts.Set
}

// New is an empty host table; Start fills it.
func New(cfg Config) *Hosts {
	return &Hosts{cfg: cfg, e: cfg.Engine, log: cfg.Log, set: hosts.NewSet()}
}

// Set is the host table (the death watcher lists its servers' panes).
func (r *Hosts) Set() *hosts.Set { return r.set }

// Statuses reports every host's connection.
func (r *Hosts) Statuses() []hosts.Status { return r.set.Statuses() }

// SetEndpoint tells the hosts where the tool server listens.
func (r *Hosts) SetEndpoint(ep tools.Endpoint) { r.set.SetEndpoint(ep) }

// host is one machine as the room sees it: its connection and the room.
type host struct {
	*hosts.SSH
	r *Hosts
}

// host returns the host of name, or nil.
func (r *Hosts) host(name string) *host {
	if h := r.set.Get(name); h != nil {
		return &host{SSH: h, r: r}
	}
	return nil
}
