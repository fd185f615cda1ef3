// Package statefile is the engine's disk formats under the state
// directory, as pure functions of (state dir, node id): the node files in
// <state>/nodes (metadata, kept launch, last screen, recorded exit, the
// intent marks of a submit or close, the sandbox cache), reading them
// bounded, and writing a mark atomically. It knows nothing of nodes,
// tmux or the tool server.
package statefile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// NodesDir is the folder of node files under the state dir.
const NodesDir = "nodes"

// Path is <state>/nodes/<id><suffix>.
func Path(stateDir, id, suffix string) string {
	return filepath.Join(stateDir, NodesDir, id+suffix)
}

// The node files' suffixes.
const (
	Meta    = ".json"        // the node's metadata (NodeMeta)
	Launch  = ".launch.json" // its kept launch (LaunchRecord)
	Screen  = ".screen.json" // its last screen (KeptScreen)
	Exit    = ".exit.json"   // its program's own exit (ExitRecord)
	Input   = ".input"       // a submit's intent (Mark)
	Closing = ".closing"     // a close's intent (Mark)
	Cache   = ".cache"       // the sandbox's cache directory
)

// ReadJSON reads a state file, bounded by tools.MaxStateFileBytes.
func ReadJSON(path string, v any) error {
	b, err := tools.ReadFileBounded(path, tools.MaxStateFileBytes)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	return nil
}

// Intent names the keyed call an input or a close serves: the caller's
// incarnation and its idempotency key.
type Intent struct {
	Caller string `json:"caller,omitempty"`
	Key    string `json:"key,omitempty"`
}

// Submit phases in nodes/ID.input.
const (
	PhaseText  = "text"  // the text may have been sent; Enter certainly not
	PhaseEnter = "enter" // Enter is being sent: it may have arrived
	PhaseDone  = "done"  // Enter was sent (kept for a keyed call until its receipt is stored)
)

// Mark is the content of nodes/ID.input and nodes/ID.closing.
type Mark struct {
	Op      string    `json:"op"` // "submit" or "close"
	Phase   string    `json:"phase,omitempty"`
	Intent  Intent    `json:"intent"`
	Started time.Time `json:"started"`
}

// WriteMark writes an intent file atomically (temporary file, rename)
// but without fsync: it guards against the orchestrator's death, which
// keeps the page cache; a machine's crash ends the tmux sessions too, so
// there is no line left to glue. A submit pays two or three of these.
func WriteMark(path string, m Mark) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadMark reads an intent file; false when there is none. A torn or
// foreign file reads as a submit whose Enter was not sent.
func ReadMark(path string) (Mark, bool) {
	var m Mark
	b, err := tools.ReadFileBounded(path, tools.MaxStateFileBytes)
	if err != nil {
		return m, false
	}
	if json.Unmarshal(b, &m) != nil {
		return Mark{Op: "submit", Phase: PhaseText}, true
	}
	return m, true
}

// KeptScreen is nodes/<id>.screen.json: the last screen and when it was
// saved; Status is exited once the program had ended on its own.
type KeptScreen struct {
	tools.Screen
	Status   string    `json:"status"`
	ExitCode *int      `json:"exit_code,omitempty"`
	SavedAt  time.Time `json:"saved_at"`
}

// ExitRecord is nodes/<id>.exit.json: the program's own exit, written
// when it is published, so a node that had exited before its tmux server
// went away stays exited (CONTRACT §26).
type ExitRecord struct {
	Code int       `json:"code"`
	At   time.Time `json:"at"`
}
