package toolserver

import (
	"slices"

	"github.com/termsprawl/termsprawl/tools"
)

// streamWorktrees are the live nodes' worktrees for the event stream
// (the dashboard's list and preview header, CONTRACT §19/§21), by node
// id. Dirty, Ahead and Behind come from the status cache; stale entries
// are refreshed in the background as terminal_list does, so the stream's
// reader never waits for git.
func (s *Server) streamWorktrees() map[string]tools.WorktreeState {
	t := s.wtTab()
	t.mu.Lock()
	entries := slices.Clone(t.entries)
	t.mu.Unlock()
	out := map[string]tools.WorktreeState{}
	var live []*wtEntry
	for _, e := range entries {
		if _, ok := s.liveNode(e); ok {
			out[e.Node] = tools.WorktreeState{Path: e.Path, Branch: e.Branch, Base: e.Base}
			live = append(live, e)
		}
	}
	if len(live) == 0 {
		return out
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	stale := false
	for _, e := range live {
		ws := out[e.Node]
		stale = t.fillStatusLocked(&ws) || stale
		out[e.Node] = ws
	}
	if stale && !t.refreshing {
		t.refreshing = true
		go s.refreshWorktrees(live)
	}
	return out
}
