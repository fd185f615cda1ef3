package toolserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// The tool server's own tables on disk, so that an orchestrator restart
// (even kill -9) keeps agents' tasks, open dialogs, "always" answers,
// watches and reported states (CONTRACT §16):
//
//	<state>/toolserver/dialogs.json   open and recently ended dialogs, "always" answers
//	<state>/toolserver/agents.json    reported states and tasks
//	<state>/toolserver/watches.json   live watches and fired ones not yet read
//
// Every entry carries the incarnation it belongs to. A table is written
// whole (atomically: temp file, fsync, rename) under its own mutex after
// each change, and read once at start with a size bound; entries of
// incarnations that are no longer alive (the node closed while no
// orchestrator ran) are dropped at load, so a new node that reuses an id
// inherits nothing.

// persistDir is the directory of the tables under the state dir.
const persistDir = "toolserver"

// maxPersistBytes bounds one table file at load (the quotas keep real
// tables far below it).
const maxPersistBytes = 16 << 20

// Table file names.
const (
	dialogsFile = "dialogs.json"
	agentsFile  = "agents.json"
	watchesFile = "watches.json"
)

// store reads and writes the table files.
type store struct {
	dir string // "" keeps everything in memory (no state dir)
	log *slog.Logger
}

func newStore(stateDir string, log *slog.Logger) *store {
	if stateDir == "" {
		return &store{log: log}
	}
	return &store{dir: filepath.Join(stateDir, persistDir), log: log}
}

// save writes v as the named table. A failure is logged and returned;
// most callers go on (the table in memory stays right, and the next
// change writes it again), but one that hands out something that must
// survive a restart (a dialog id) refuses it.
func (st *store) save(name string, v any) error {
	if st == nil || st.dir == "" {
		return nil
	}
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		st.log.Warn("persist table", "file", name, "err", err)
		return fmt.Errorf("persist %s: %w", name, err)
	}
	if err := tools.WriteJSONAtomic(filepath.Join(st.dir, name), v); err != nil {
		st.log.Warn("persist table", "file", name, "err", err)
		return fmt.Errorf("persist %s: %w", name, err)
	}
	return nil
}

// load reads the named table into v; a missing file leaves v as it is.
func (st *store) load(name string, v any) error {
	if st == nil || st.dir == "" {
		return nil
	}
	path := filepath.Join(st.dir, name)
	b, err := tools.ReadFileBounded(path, maxPersistBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w (move it away to start with empty tables)", path, err)
	}
	return nil
}

// liveIncarnations are the incarnations whose state may be restored: every
// node the engine knows, and the operator.
func liveIncarnations(o *orchestrator.Orchestrator) map[string]bool {
	live := map[string]bool{operatorIdentity.Incarnation: true}
	for _, m := range o.Nodes() {
		live[m.Incarnation()] = true
	}
	return live
}

// restore loads every table, dropping what belongs to dead incarnations.
// A table that cannot be read is logged and starts empty (the file is
// left for a human to look at; the next change overwrites it).
func (s *Server) restore() {
	live := liveIncarnations(s.o)
	if err := s.dialogs.restore(s.store, live); err != nil {
		s.log.Warn("restore dialogs", "err", err)
	}
	if err := s.agents.restore(s.store, live); err != nil {
		s.log.Warn("restore agents", "err", err)
	}
	if err := s.restoreWatches(live); err != nil {
		s.log.Warn("restore watches", "err", err)
	}
}
