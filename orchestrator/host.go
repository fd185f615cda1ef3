package orchestrator

import (
	"context"

	"github.com/termsprawl/termsprawl/orchestrator/hostnodes"
	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/node"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// Hosts: tmux servers on other machines, reached over ssh (CONTRACT §17).
// The connection is orchestrator/hosts' (hosts.SSH); the nodes on hosts
// — the host table, adoption, placeholders, closes that wait for their
// host, host_list and host_remove — are orchestrator/hostnodes', which
// sees the engine through hostEnv. This is the glue.

// Host connection states (HostStatus.State).
const (
	HostConnecting  = hosts.StateConnecting
	HostConnected   = hosts.StateConnected
	HostUnreachable = hosts.StateUnreachable
)

// HostError is why a host could not be used (hosts.Error).
type HostError = hosts.Error

// ErrHostUnreachable is wrapped by the errors of operations on the nodes
// of a host that cannot be reached now.
var ErrHostUnreachable = hosts.ErrUnreachable

// HostStatus is one host as doctor and tests see it.
type HostStatus = hosts.Status

// newHosts is the engine's host room, empty until Start; its test seams
// are the engine's hooks.
func (o *Orchestrator) newHosts() *hostnodes.Hosts {
	return hostnodes.New(hostnodes.Config{StateDir: o.cfg.StateDir, Log: o.log, Deaths: o.deaths, CloseDeadline: closeDeadline,
		Engine: hostEnv{o}, Lost: o.hooks.hostLost, Adopted: o.hooks.hostAdopted, Connect: o.hooks.hostConnect})
}

// Hosts reports every host's connection.
func (o *Orchestrator) Hosts() []HostStatus { return o.hosts.Statuses() }

// SetEndpoint tells the hosts where the tool server listens: each gets
// the reverse forward and its endpoint.json now and after every reconnect.
func (o *Orchestrator) SetEndpoint(ep tools.Endpoint) { o.hosts.SetEndpoint(ep) }

// HostList reports every host: its state, node count, a round trip
// measured now and since when the state holds (hostnodes.Hosts.List).
func (o *Orchestrator) HostList(ctx context.Context) []tools.HostInfo { return o.hosts.List(ctx) }

// RemoveHost stops driving host name and removes it from hosts.json;
// with closeNodes its live nodes are closed first (hostnodes.Hosts.Remove).
func (o *Orchestrator) RemoveHost(ctx context.Context, name string, closeNodes bool) (tools.HostRemoved, error) {
	return o.hosts.Remove(ctx, name, closeNodes, statefile.IntentOf(ctx))
}

// HostAgentConfig is what an agent launched on host needs: the remote
// termsprawlctl and the path of its MCP registration there (written now).
// Empty ctl: the host has no termsprawlctl.
func (o *Orchestrator) HostAgentConfig(ctx context.Context, host string) (ctl, mcpConfig string, err error) {
	return o.hosts.AgentConfig(ctx, host)
}

// HostCtlMissing is what an agent launched on host is told when the host
// has no termsprawlctl (TERMSPRAWL_CTL_MISSING in its environment): its
// node runs and is driven, but it cannot call termsprawl. Empty when the
// host has one, or is not known.
func (o *Orchestrator) HostCtlMissing(host string) string { return o.hosts.CtlMissing(host) }

// serverFor is the tmux server a node's session is on.
func (o *Orchestrator) serverFor(meta NodeMeta) hosts.Server {
	if meta.Host != "" {
		if srv, ok := o.hosts.LastServer(meta.Host); ok {
			return srv
		}
	}
	if srv := o.shards.Get(meta.Socket); srv != nil && meta.Host == "" {
		return srv
	}
	return o.shards.List()[0]
}

// hostEnv is the engine as the nodes on hosts see it (hostnodes.Engine).
type hostEnv struct{ o *Orchestrator }

func (e hostEnv) Nodes() []*node.Node               { return e.o.sortedNodes() }
func (e hostEnv) Node(id string) *node.Node         { return e.o.node(id) }
func (e hostEnv) Forget(id string)                  { e.o.forget(id) }
func (e hostEnv) ForgetClosed(n *node.Node)         { e.o.forgetClosed(n) }
func (e hostEnv) RemoveFiles(id string)             { e.o.removeFiles(id) }
func (e hostEnv) NewNode(m NodeMeta) *node.Node     { return e.o.newNode(m) }
func (e hostEnv) WriteSessionFile(m NodeMeta) error { return e.o.writeSessionFile(m) }
func (e hostEnv) Reattach(n *node.Node)             { e.o.reattach(n) }
func (e hostEnv) OpDone()                           { e.o.ops.Done() }

func (e hostEnv) Register(n *node.Node) {
	e.o.mu.Lock()
	e.o.nodes[n.Meta.ID] = n
	e.o.mu.Unlock()
}

func (e hostEnv) Unregister(id string) {
	e.o.mu.Lock()
	delete(e.o.nodes, id)
	e.o.mu.Unlock()
}

func (e hostEnv) ListUnreachable(m NodeMeta, base uint64, reason string) {
	e.o.listUnreachable(m, base, reason)
}

func (e hostEnv) LiveSessions(ctx context.Context, srv hosts.Server) (map[string]bool, error) {
	return e.o.liveSessions(ctx, srv)
}

func (e hostEnv) BeginOp() error {
	if !e.o.beginOp() {
		return errShuttingDown()
	}
	return nil
}
