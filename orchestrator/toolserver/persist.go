package toolserver

import "github.com/termsprawl/termsprawl/orchestrator/tables"

// The tool server's own tables on disk (orchestrator/tables), so that an
// orchestrator restart keeps agents' tasks, open dialogs, "always"
// answers, watches and reported states (CONTRACT §16):
//
//	<state>/toolserver/dialogs.json   open and recently ended dialogs, "always" answers
//	<state>/toolserver/agents.json    reported states and tasks
//	<state>/toolserver/watches.json   live watches and fired ones not yet read
//	<state>/toolserver/worktrees.json the worktrees termsprawl made (worktree.go)

// Table file names.
const (
	dialogsFile = tables.DialogsFile
	agentsFile  = tables.AgentsFile
	watchesFile = tables.WatchesFile
)

// persistDir is the tables' directory under the state dir.
const persistDir = tables.Dir

// liveIncarnations are the incarnations whose state may be restored: every
// node the engine knows, and the operator.
func liveIncarnations(o nodeDirectory) map[string]bool {
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
	live := liveIncarnations(s.eng.nodes)
	if err := s.dialogs.Restore(s.store, live); err != nil {
		s.log.Warn("restore dialogs", "err", err)
	}
	if err := s.agents.Restore(s.store, live); err != nil {
		s.log.Warn("restore agents", "err", err)
	}
	if err := s.watches.Restore(live, s.prepareWatch, s.log); err != nil {
		s.log.Warn("restore watches", "err", err)
	}
}
