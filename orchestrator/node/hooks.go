package node

import "github.com/termsprawl/termsprawl/orchestrator/hosts"

// hooks are the node's test seams, its engine's (Env.Hooks); none for a
// node built without an engine (unit tests of one node).
func (n *Node) hooks() *Hooks {
	if n.Env == nil {
		return &Hooks{}
	}
	return n.Env.Hooks()
}

// Hooks are a node's test seams, set by the engine's tests on one engine
// (its hooks, which embed these) and read by the node through its Env:
// never a package variable, so a binary can set none. Each is nil unless
// a test set it.
type Hooks struct {
	// StateRead runs in exitState right after the node's status and exit
	// reason were read (tests end the node there, as a concurrent exit
	// would, to show the two are read together).
	StateRead func(n *Node)
	// ExitUnconfirmed, if set, runs when a seed found an exit
	// reported by the process watcher that tmux does not confirm yet; zombie
	// tells whether the program is a zombie (the report stands and is
	// checked again) or alive (the report is dropped).
	ExitUnconfirmed func(n *Node, zombie bool)
	// Sleeping, if set, runs in sleep between the decision and the
	// switch-off (tests widen that window with it).
	Sleeping func(n *Node)
	// Rested, if set, runs after a node's mirror went to rest.
	Rested func(n *Node)
	// Attach, if set, runs first in attach; an error it returns is
	// attach's.
	Attach func(n *Node) error
	// SearchCommand, if set, runs for each command line a search sends
	// to tmux (benchmarks count them); SearchCaptured after a node's
	// capture arrived, before it is searched (tests widen the window).
	SearchCommand  func()
	SearchCaptured func(id string)
	// WaitLoop, if set, runs once per turn of a wait's loop (tests
	// count the turns).
	WaitLoop func(n *Node)
	// QuietAgain, if set, runs when a quiet wait's timer ran out but
	// output had arrived that the mirror had not shown, so the quiet
	// starts over.
	QuietAgain func(n *Node)
	// EarlyExit, if set, runs when a launch starts its early-exit
	// watch (after the node was registered and every lock released).
	EarlyExit func(n *Node)
	// LaunchQuiet, if set, runs when that watch's quiet period ran out,
	// with what the program was found doing then.
	LaunchQuiet func(n *Node, a hosts.Activity)
	// Exiting, if set, runs as the program's exit is about to be
	// published (tests hold the publication back with it, as a loaded
	// machine would).
	Exiting func(n *Node)
}
