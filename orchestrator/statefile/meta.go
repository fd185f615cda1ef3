package statefile

import (
	"strconv"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// NodeMeta is what the orchestrator keeps about a node on disk
// (<state>/nodes/<id>.json), so a restarted orchestrator knows who owns it.
type NodeMeta struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Command []string `json:"command"`
	Cwd     string   `json:"cwd"`
	Owner   string   `json:"owner"`            // launching node id, or "operator"
	Parent  string   `json:"parent,omitempty"` // launching node id when a node launched it
	Agent   string   `json:"agent,omitempty"`  // agent kind for agent nodes
	// Policy is the named table of permission rules the node was
	// launched with (CONTRACT §28).
	Policy  string    `json:"policy,omitempty"`
	Created time.Time `json:"created"`
	// Socket is the tmux server (shard) the node's session is on; empty
	// in metadata written before shards: the configured socket.
	Socket string `json:"socket,omitempty"`
	// Ancestors are the incarnations of the launching node and of the
	// nodes that launched it, nearest first: they may drive this node.
	Ancestors []string `json:"ancestors,omitempty"`
	// Epoch counts the orchestrator lives that mirrored this node; it is
	// the high part of the node's revisions, so revisions never repeat
	// across restarts (the engine's revisionBase).
	Epoch uint64 `json:"epoch,omitempty"`
	// Logs are the application logs the node follows (CONTRACT §11).
	Logs []tools.LogSpec `json:"logs,omitempty"`
	// Host is the machine the session is on (a name of Config.Hosts);
	// empty: this one.
	Host string `json:"host,omitempty"`
	// Recording is the directory the node is being recorded into: a
	// restarted orchestrator goes on recording there.
	Recording string `json:"recording,omitempty"`
	// LostAt is when an orchestrator found the node's tmux server gone
	// (the engine's lost.go): it stays lost until restored or forgotten.
	LostAt time.Time `json:"lost_at,omitzero"`
	// Sandbox is the profile its program runs under (CONTRACT §27);
	// empty in metadata written before sandboxes: none.
	Sandbox string `json:"sandbox,omitempty"`
}

// Incarnation names this life of the node: its id and creation time. A
// later node that reuses the id has another incarnation.
func (m NodeMeta) Incarnation() string {
	return m.ID + "@" + strconv.FormatInt(m.Created.UnixNano(), 36)
}
