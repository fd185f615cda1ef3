package node

import (
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/memtrim"
	"github.com/termsprawl/termsprawl/orchestrator/proc"
)

// Env is what a node uses of its engine, and all of it: the engine's
// limits, the output meter, the process watcher, the state paths, and
// the engine's reactions to a node's status, exit and client's end.
type Env interface {
	// Limits are the engine's settings a node reads.
	Limits() Limits
	// Meter counts the output every node took in (orchestrator/memtrim).
	Meter() *memtrim.Meter
	// Procs is the process watcher; nil where pidfds are not available.
	Procs() *proc.Watcher
	// PaneDied tells the engine a pane's program may have ended: it reads
	// every pane's dead flag (the engine's death watch).
	PaneDied()
	// Stopping is closed when the engine closes.
	Stopping() <-chan struct{}
	// StatusChanged tells the engine a node's status changed.
	StatusChanged()
	// KeepExit keeps a node's exit code on disk (the recorded exit).
	KeepExit(id string, code int)
	// ClientEnded tells the engine the node's control client ended.
	ClientEnded(n *Node)
	// MetaPath is the path of a node's meta file.
	MetaPath(id string) string
	// Hooks are the node's test seams (never nil).
	Hooks() *Hooks
}

// Limits are the engine's settings a node reads.
type Limits struct {
	IdleAfter, RestAfter, LaunchWatch time.Duration
	Version, StateDir                 string
}
