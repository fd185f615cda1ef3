package orchestrator

import "github.com/termsprawl/termsprawl/orchestrator/node"

// hooks are the engine's test seams: functions the package's tests set on
// one Orchestrator (o.hooks, or Config.hooks for the ones that run while
// New adopts and connects) to widen a race window or count a step. They
// are per engine, so tests that use them can run in parallel, and they
// are unexported fields, not package variables: a binary has no way to set
// one, and none is a symbol of it (TestNoTestSeamsInTheBinary). Each is
// nil unless a test set it.
type hooks struct {
	// Hooks are the seams that run inside a node (orchestrator/node),
	// which the node reads through its Env: like these, a field of one
	// engine that only the package's tests set.
	node.Hooks
	// listSessions, if set, replaces tmux's answer to list-sessions.
	listSessions func([]string) []string
	// closed, if set, runs in CloseNode after the node's screen was
	// detached (tests widen the window between detach and the end of the
	// close with it).
	closed func(n *node.Node)
	// reattach runs when a reattach starts, before it takes any lock;
	// reattached when it returns.
	reattach, reattached func(old *node.Node)
	// listPanes, if set, runs before one server's list-panes in
	// listPanesAll (tests block a host there).
	listPanes func(srv *tmuxServer)
	// hostLost runs when a host was marked unreachable, before the
	// supervisor reconnects; hostAdopted after a (re)connect's sessions
	// are mirrored again; hostConnect at the start of every connection
	// attempt. New hands them to orchestrator/hostnodes (its Config):
	// set them in Config.hooks.
	hostLost, hostAdopted, hostConnect func(host string)
	// kept, if set, runs after each round of the keeper.
	kept func()
	// target, if set and not returning nil, replaces a launch's
	// target (tests put a node on a server whose operations block).
	target func(o *Orchestrator, spec LaunchSpec) launchTarget
	// beforeRegister, if set, runs in a launch after the node's
	// mirror attached and before the node is registered.
	beforeRegister func(id string)
	// shutdown, if set, runs at the start of Close.
	shutdown func()
	// humanClients, if set, runs as each shard's list-clients starts,
	// with the number of shards asked.
	humanClients func(shards int)
	// reclaimed, if set, is told each shard socket that was reclaimed.
	reclaimed func(socket string)
	// lost, if set, runs when loseNode has listed a node.
	lost func(id string)
	// render, if set, is told the bytes held by every screenshot draw in
	// flight as each starts (render.Budget).
	render func(inFlight int64)
}
