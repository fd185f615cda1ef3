package orchestrator

// hooks are the engine's test seams: functions the package's tests set on
// one Orchestrator (o.hooks, or Config.hooks for the ones that run while
// New adopts and connects) to widen a race window or count a step. They
// are per engine, so tests that use them can run in parallel, and they
// are unexported fields, not package variables: a binary has no way to set
// one, and none is a symbol of it (TestNoTestSeamsInTheBinary). Each is
// nil unless a test set it.
type hooks struct {
	// stateRead runs in exitState right after the node's status and exit
	// reason were read (tests end the node there, as a concurrent exit
	// would, to show the two are read together).
	stateRead func(n *node)
	// listSessions, if set, replaces tmux's answer to list-sessions.
	listSessions func([]string) []string
	// closed, if set, runs in CloseNode after the node's screen was
	// detached (tests widen the window between detach and the end of the
	// close with it).
	closed func(n *node)
	// reattach runs when a reattach starts, before it takes any lock;
	// reattached when it returns.
	reattach, reattached func(old *node)
	// listPanes, if set, runs before one server's list-panes in
	// listPanesAll (tests block a host there).
	listPanes func(srv *tmuxServer)
	// exitUnconfirmed, if set, runs when a seed found an exit
	// reported by the process watcher that tmux does not confirm yet; zombie
	// tells whether the program is a zombie (the report stands and is
	// checked again) or alive (the report is dropped).
	exitUnconfirmed func(n *node, zombie bool)
	// hostLost runs when a host was marked unreachable, before the
	// supervisor reconnects; hostAdopted after a (re)connect's sessions
	// are mirrored again; hostConnect at the start of every connection
	// attempt.
	hostLost, hostAdopted, hostConnect func(host string)
	// sleeping, if set, runs in sleep between the decision and the
	// switch-off (tests widen that window with it).
	sleeping func(n *node)
	// kept, if set, runs after each round of the keeper.
	kept func()
	// target, if set and not returning nil, replaces a launch's
	// target (tests put a node on a server whose operations block).
	target func(o *Orchestrator, spec LaunchSpec) launchTarget
	// beforeRegister, if set, runs in a launch after the node's
	// mirror attached and before the node is registered.
	beforeRegister func(id string)
	// earlyExit, if set, runs when a launch starts its early-exit
	// watch (after the node was registered and every lock released).
	earlyExit func(n *node)
	// shutdown, if set, runs at the start of Close.
	shutdown func()
	// humanClients, if set, runs as each shard's list-clients starts,
	// with the number of shards asked.
	humanClients func(shards int)
	// reclaimed, if set, is told each shard socket that was reclaimed.
	reclaimed func(socket string)
	// rested, if set, runs after a node's mirror went to rest.
	rested func(n *node)
	// attach, if set, runs first in attach; an error it returns is
	// attach's.
	attach func(n *node) error
	// waitLoop, if set, runs once per turn of a wait's loop (tests
	// count the turns).
	waitLoop func(n *node)
	// quietAgain, if set, runs when a quiet wait's timer ran out but
	// output had arrived that the mirror had not shown, so the quiet
	// starts over.
	quietAgain func(n *node)
	// searchCommand, if set, runs for each command line a search sends
	// to tmux (benchmarks count them); searchCaptured after a node's
	// capture arrived, before it is searched (tests widen the window).
	searchCommand  func()
	searchCaptured func(id string)
	// lost, if set, runs when loseNode has listed a node.
	lost func(id string)
}
