package monitor

import (
	"context"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/tools"
)

// Engine is what the monitor reads from the orchestrator.
type Engine interface {
	// Peek returns the live nodes' rows without asking tmux and without
	// observing (waking) any node.
	Peek() []tools.NodeInfo
	// Show opens a look at one node that counts as observing it until it
	// is closed (orchestrator.Showing).
	Show(ctx context.Context, id string) (Shown, error)
}

// Shown is one open look at a node.
type Shown interface {
	// Frame returns the node's cells and each row's stamp, or nil stamps
	// (orchestrator.Showing.Frame: rows with equal stamps have equal
	// cells; the grid stays intact until the Frame call after the next).
	Frame() (render.Grid, []uint64)
	// Changed returns the revision and a channel closed at the next one.
	Changed() (uint64, <-chan struct{})
	// Closing is closed when the node's life ends.
	Closing() <-chan struct{}
	Close()
}

// Side is what the tool server knows of the nodes and the engine does
// not: agent states, pending dialogs, watches.
type Side interface {
	MonitorSide() SideState
}

// SideState is one reading of the tool server's tables.
type SideState struct {
	Agents  map[string]AgentState `json:"agents"` // by node id
	Dialogs []tools.Dialog        `json:"dialogs"`
	Watches []Watch               `json:"watches"`
	// Worktrees are the live nodes' git worktrees (CONTRACT §21), by
	// node id.
	Worktrees map[string]tools.WorktreeState `json:"worktrees,omitempty"`
}

// AgentState is an agent's state (CONTRACT §20), since when, and
// whether it needs a human.
type AgentState struct {
	State      string    `json:"state"`
	Message    string    `json:"message,omitempty"`
	Updated    time.Time `json:"updated,omitzero"`
	Since      time.Time `json:"since,omitzero"`
	NeedsHuman bool      `json:"needs_human,omitempty"`
}

// Watch is a watch in progress or fired and not yet read.
type Watch struct {
	ID       string `json:"watch"`
	Terminal string `json:"terminal"`
	Owner    string `json:"owner"` // the node that started it, or "operator"
	What     string `json:"what"`  // the condition, in words
	Fired    bool   `json:"fired"`
}
