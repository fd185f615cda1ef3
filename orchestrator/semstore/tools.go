package semstore

import (
	"errors"

	"github.com/termsprawl/termsprawl/orchestrator/semantic"
	"github.com/termsprawl/termsprawl/tools"
)

// The semantic tools' answers from one node's commits (CONTRACT §22):
// capabilities, snapshot lines, the tree's changes, locator queries and
// the node a locator or a semantic ref names.

func usage(format string, a ...any) error { return tools.Errorf(tools.KindUsage, format, a...) }

// Availability is terminal_capabilities' semantic_tree.
func (s *Store) Availability() string {
	if _, ok := s.Latest(); ok {
		return "available"
	}
	return "unavailable"
}

// Lines are the latest tree's compact lines (nil without a tree).
func (s *Store) Lines() []string {
	c, ok := s.Latest()
	if !ok {
		return nil
	}
	return semantic.Lines(c.Root, c.Rev)
}

// Changes are the tree's changes since revision cursor (nil without a
// tree).
func (s *Store) Changes(cursor uint64) *tools.SemanticChanges {
	cur, ok := s.Latest()
	if !ok {
		return nil
	}
	var old *semantic.Node
	var since uint64
	if c, ok := s.BySeq(s.BaselineAt(cursor)); ok {
		old, since = c.Root, c.Rev
	}
	d := semantic.Diff(old, since, cur.Root, cur.Rev)
	return &tools.SemanticChanges{Revision: cur.Rev, Since: since, Added: d.Added, Removed: d.Removed, Changed: d.Changed}
}

// ErrUnavailable refuses a locator for a program without a probe.
func ErrUnavailable(id string) error {
	return tools.Errorf(tools.KindNotRun, "semantic_tree: unavailable: the program in %q has published no semantic tree (it has no probe), so there are no roles or names to target; use its screen text instead: terminal_query {text or pattern} and the mouse operations' at or ref; nothing was sent", id).
		WithDetails("reason", "semantic-tree-unavailable").WithDetails("semantic_tree", "unavailable")
}

// LocatorOf is the room's locator of the contract's.
func LocatorOf(l tools.SemanticLocator) semantic.Locator {
	return semantic.Locator{Role: l.Role, Name: l.Name, TestID: l.TestID, Label: l.Label, Text: l.Text, Nth: l.Nth}
}

// MatchOf is a node of a commit at rev as the contract shows it.
func MatchOf(f semantic.Flat, rev uint64) tools.SemanticMatch {
	st := tools.SemanticState{}
	if f.State != nil {
		st = tools.SemanticState(*f.State)
	}
	return tools.SemanticMatch{Ref: semantic.RefOf(f.ID, rev), Role: f.Role, Name: f.Name, Value: f.Value, TestID: f.TestID, Label: f.Label,
		Bounds: tools.SemanticBounds(f.Bounds), State: st, Line: semantic.Line(f, rev)}
}

// Query is terminal_query with a locator: every match in the latest
// commit.
func (s *Store) Query(id string, l tools.SemanticLocator) (tools.QueryResult, error) {
	c, ok := s.Latest()
	if !ok {
		return tools.QueryResult{}, ErrUnavailable(id)
	}
	loc := LocatorOf(l)
	ms, err := semantic.Find(c.Root, loc)
	if err != nil {
		return tools.QueryResult{}, usage("locator: %v", err)
	}
	if len(ms) > 1 {
		// A locator names one node (CONTRACT §22), in a query as in an
		// action: several are a conflict that lists them.
		return tools.QueryResult{}, ambiguous(id, loc, ms, c.Rev)
	}
	res := tools.QueryResult{Terminal: id, Revision: c.Rev, Matches: []tools.QueryMatch{}, Nodes: []tools.SemanticMatch{}}
	for _, f := range ms {
		res.Nodes = append(res.Nodes, MatchOf(f, c.Rev))
	}
	return res, nil
}

// Locate is the one node a locator names in the latest commit: none is
// not_found, several (without nth) conflict ambiguous-locator.
func (s *Store) Locate(id string, l tools.SemanticLocator) (semantic.Flat, Commit, error) {
	c, ok := s.Latest()
	if !ok {
		return semantic.Flat{}, c, ErrUnavailable(id)
	}
	loc := LocatorOf(l)
	f, ms, err := semantic.One(c.Root, loc)
	switch {
	case errors.Is(err, semantic.ErrAmbiguous):
		return f, c, ambiguous(id, loc, ms, c.Rev)
	case err != nil:
		return f, c, usage("locator: %v", err)
	case len(ms) == 0:
		return f, c, tools.Errorf(tools.KindNotFound, "no node of %q's semantic tree matches %s (commit at revision %d); terminal_snapshot shows the tree", id, loc, c.Rev).
			WithDetails("reason", "no-match")
	}
	return f, c, nil
}

// ambiguous is the conflict of a locator that matches several nodes: it
// lists them (at most 20).
func ambiguous(id string, loc semantic.Locator, ms []semantic.Flat, rev uint64) error {
	lines := make([]string, 0, min(len(ms), 20))
	for _, m := range ms[:min(len(ms), 20)] {
		lines = append(lines, semantic.Line(m, rev))
	}
	return tools.Errorf(tools.KindConflict, "ambiguous-locator: %s matches %d nodes of %q; narrow it (name, test_id) or pick one with nth", loc, len(ms), id).
		WithDetails("reason", "ambiguous-locator").WithDetails("matches", lines)
}

// ResolveRef resolves semantic:ID@REV: the node must still be in
// the latest commit, else conflict stale-ref.
func (s *Store) ResolveRef(id, ref string) (semantic.Flat, Commit, error) {
	nodeID, rev, _, err := semantic.ParseRef(ref)
	if err != nil {
		return semantic.Flat{}, Commit{}, usage("%v; pass a ref exactly as terminal_query or terminal_snapshot returned it", err)
	}
	c, ok := s.Latest()
	if !ok {
		return semantic.Flat{}, c, ErrUnavailable(id)
	}
	if rev > c.Rev {
		return semantic.Flat{}, c, usage("ref %s is from revision %d, newer than %q's latest commit (%d): pass a ref this terminal returned", ref, rev, id, c.Rev)
	}
	f, ok := semantic.Lookup(c.Root, nodeID)
	if !ok {
		return f, c, tools.Errorf(tools.KindConflict, "stale-ref: node %q of %s is no longer in the semantic tree (latest commit at revision %d); call terminal_query with a locator again", nodeID, ref, c.Rev).
			WithDetails("reason", "stale-ref").WithDetails("ref", ref)
	}
	return f, c, nil
}

// Target turns a locator or a semantic ref into the cell a
// pointer action aims at.
func (s *Store) Target(id string, l *tools.SemanticLocator, ref string) (*tools.Cell, error) {
	var f semantic.Flat
	var err error
	if l != nil {
		f, _, err = s.Locate(id, *l)
	} else {
		f, _, err = s.ResolveRef(id, ref)
	}
	if err != nil {
		return nil, err
	}
	row, col := semantic.Center(f.Bounds)
	return &tools.Cell{Row: row, Column: col}, nil
}
