package statefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// ReadMeta reads node id's metadata (nodes/<id>.json), bounded; a file
// that names another node is an error.
func ReadMeta(stateDir, id string) (NodeMeta, error) {
	var m NodeMeta
	p := Path(stateDir, id, Meta)
	b, err := tools.ReadFileBounded(p, tools.MaxStateFileBytes)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("parse %s: %w", p, err)
	}
	if m.ID != id {
		return m, fmt.Errorf("%s names node %q", p, m.ID)
	}
	return m, nil
}

// MetaRead is one node metadata file as read: the metadata, or why it
// could not be read (Err; the metadata then has only the id).
type MetaRead struct {
	NodeMeta
	Err error
}

// ReadMetas reads every node metadata file once (an unreadable one keeps
// its error: adoption writes defaults for a session that lacks them).
func ReadMetas(stateDir string) map[string]MetaRead {
	out := map[string]MetaRead{}
	files, _ := filepath.Glob(filepath.Join(stateDir, NodesDir, "*"+Meta))
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), Meta)
		if !tools.ValidNodeID(id) {
			continue
		}
		m, err := ReadMeta(stateDir, id)
		if err != nil {
			m = NodeMeta{ID: id}
		}
		out[id] = MetaRead{m, err}
	}
	return out
}

// RemoveStaleTemps removes the temporary files of atomic writes that a
// killed orchestrator left in nodes/ and sessions/ (the state dir's lock
// is held: nobody else writes there), and a kept launch or screen whose
// node's metadata is gone (its life ended while the keeper wrote).
func RemoveStaleTemps(stateDir string) {
	for _, dir := range []string{filepath.Join(stateDir, NodesDir), filepath.Dir(tools.SessionPath(stateDir, "x"))} {
		temps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
		for _, t := range temps {
			os.Remove(t)
		}
	}
	for _, pat := range []string{"*" + Launch, "*" + Screen} {
		files, _ := filepath.Glob(filepath.Join(stateDir, NodesDir, pat))
		for _, f := range files {
			id, _, _ := strings.Cut(filepath.Base(f), ".")
			if _, err := os.Stat(Path(stateDir, id, Meta)); errors.Is(err, os.ErrNotExist) {
				os.Remove(f)
			}
		}
	}
}
