// Package lostnodes is the engine's table of lost nodes (CONTRACT §25,
// §26): nodes whose tmux server is gone, listed with their last screen
// until they are restored or forgotten, and nodes whose program had
// exited before their server went, listed as exited with their code.
//
// It owns the table, its lock and what a loss does on disk: the node's
// metadata is marked lost (LostAt), its last screen is kept, and its
// session file (its token) and input mark go. The engine decides when a
// node is lost (its server was gone at start, or died while termsprawl
// runs), starts a restore's launch and removes a forgotten node's files.
//
// Locks: Table.mu guards the table and every entry's restore flag. The
// engine moves a live node here in one step, under its own node-map lock,
// so the order is the engine's lock first, then Table.mu; nothing here
// calls back into the engine. No goroutine is started here.
package lostnodes

import (
	"cmp"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// ErrNotListed is returned for an id the table does not hold: the
// engine answers it with the node's real state (running, or not found).
var ErrNotListed = errors.New("not listed lost")

// Entry is one node listed lost (or exited before its server went): its
// metadata and last screen with the views of them (statefile.Lost), and
// its kept launch, which a restore starts again.
type Entry struct {
	statefile.Lost
	Launch    statefile.LaunchRecord
	restoring bool // a restore is under way; guarded by Table.mu
}

// Err is the error of an operation on the entry's node: a conflict that
// says why it is listed and how to restore or forget it.
func (e *Entry) Err() error {
	return tools.Errorf(tools.KindConflict, "terminal %q is %s: %s", e.Meta.ID, e.Status, e.Reason()).WithDetails("status", e.Status)
}

// Table is the lost nodes of one state dir.
type Table struct {
	stateDir string
	log      *slog.Logger

	mu   sync.Mutex // guards byID and each entry's restoring (after the engine's lock)
	byID map[string]*Entry
}

// New returns an empty table for stateDir's nodes.
func New(stateDir string, log *slog.Logger) *Table {
	return &Table{stateDir: stateDir, log: log, byID: map[string]*Entry{}}
}

// Get returns id's entry, or nil.
func (t *Table) Get(id string) *Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// Put lists e. The engine calls it under its own node-map lock when a
// live node moves here, so no reader sees the node in neither table.
func (t *Table) Put(e *Entry) {
	t.mu.Lock()
	t.byID[e.Meta.ID] = e
	t.mu.Unlock()
}

// Sorted returns every entry by creation (then id).
func (t *Table) Sorted() []*Entry {
	t.mu.Lock()
	out := make([]*Entry, 0, len(t.byID))
	for _, e := range t.byID {
		out = append(out, e)
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b *Entry) int {
		if c := a.Meta.Created.Compare(b.Meta.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Meta.ID, b.Meta.ID)
	})
	return out
}

// Adopt lists a node adoption did not find, whose tmux server was gone
// (or that was lost before), from its files and its kept launch: a node
// not marked lost before is marked now, and its token dies (the session
// file goes). Nil, listing nothing, when a close of it was under way (it
// is finished, not lost) or its launch was not kept.
func (t *Table) Adopt(m statefile.NodeMeta) *Entry {
	if _, err := os.Stat(statefile.Path(t.stateDir, m.ID, statefile.Closing)); err == nil {
		return nil
	}
	rec, err := statefile.ReadLaunch(t.stateDir, m.ID)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			t.log.Warn("node's kept launch unreadable: forgotten, not listed lost", "node", m.ID, "err", err)
		}
		return nil
	}
	e := &Entry{Lost: statefile.ReadLost(t.stateDir, m), Launch: rec}
	if m.LostAt.IsZero() {
		e.Meta.LostAt = time.Now().UTC()
		t.writeMeta(e)
	}
	t.dropToken(m.ID)
	t.Put(e)
	return e
}

// Died builds the entry of a live node whose tmux server died, from its
// metadata, last screen and kept launch rec: lost, restorable; or, when
// its program had exited before (code), exited with that code. Its
// metadata and last screen are written, its token dies. The caller lists
// it (Put) as it takes the node out of its own map.
func (t *Table) Died(m statefile.NodeMeta, screen tools.Screen, code *int, rec statefile.LaunchRecord) *Entry {
	now := time.Now().UTC()
	e := &Entry{Lost: statefile.Lost{Meta: m, Status: tools.StatusLost, HasScreen: true,
		Screen: statefile.KeptScreen{Screen: screen, Status: tools.StatusRunning, SavedAt: now}}, Launch: rec}
	if code != nil {
		e.Status = tools.StatusExited
		e.Screen.Status, e.Screen.ExitCode = tools.StatusExited, code
	} else {
		e.Meta.LostAt = now
		t.writeMeta(e)
	}
	t.writeScreen(e)
	t.dropToken(m.ID)
	return e
}

// Rewrite writes an entry's files again (a failed restore's launch
// removed them).
func (t *Table) Rewrite(e *Entry) {
	t.writeMeta(e)
	if err := statefile.WriteLaunch(t.stateDir, e.Meta.ID, e.Launch); err != nil {
		t.log.Warn("rewrite lost node's launch", "node", e.Meta.ID, "err", err)
	}
	if e.HasScreen {
		t.writeScreen(e)
	}
}

func (t *Table) writeMeta(e *Entry) {
	if err := tools.WriteJSONAtomic(statefile.Path(t.stateDir, e.Meta.ID, statefile.Meta), e.Meta); err != nil {
		t.log.Warn("mark node lost", "node", e.Meta.ID, "err", err)
	}
}

func (t *Table) writeScreen(e *Entry) {
	if err := tools.WriteJSONAtomic(statefile.Path(t.stateDir, e.Meta.ID, statefile.Screen), e.Screen); err != nil {
		t.log.Warn("keep a lost node's last screen", "node", e.Meta.ID, "err", err)
	}
}

// dropToken removes a lost node's session file (its token dies) and any
// input mark (nothing is left to settle at its prompt).
func (t *Table) dropToken(id string) {
	os.Remove(tools.SessionPath(t.stateDir, id))
	os.Remove(statefile.Path(t.stateDir, id, statefile.Input))
}

// BeginRestore marks id's entry as being restored and returns it:
// ErrNotListed when id is not listed; a conflict when it is exited rather
// than lost, or a restore is under way. EndRestore ends it.
func (t *Table) BeginRestore(id string) (*Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.byID[id]
	switch {
	case e == nil:
		return nil, ErrNotListed
	case e.Status != tools.StatusLost:
		return nil, tools.Errorf(tools.KindConflict, "terminal %q is %s, not lost: %s; termsprawl forget %s drops it", id, e.Status, e.Reason(), id).
			WithDetails("status", e.Status)
	case e.restoring:
		return nil, tools.Errorf(tools.KindConflict, "terminal %q is being restored already", id)
	}
	e.restoring = true
	return e, nil
}

// EndRestore ends e's restore: a restored node is no longer listed (ok),
// a failed one stays lost as it was.
func (t *Table) EndRestore(e *Entry, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.restoring = false
	if ok && t.byID[e.Meta.ID] == e {
		delete(t.byID, e.Meta.ID)
	}
}

// RestoreSpec is what restoring e starts: its kept launch, in cwd or
// with command instead when given, owned by the operator with no parent
// (nothing of the old node but what §25 names), its recording resumed
// rather than started. A directory that is gone is a usage error naming
// the fix.
func (e *Entry) RestoreSpec(cwd string, command []string) (statefile.LaunchSpec, error) {
	id := e.Meta.ID
	spec := e.Launch.Launch()
	spec.Cwd = cmp.Or(cwd, spec.Cwd)
	if len(command) > 0 {
		spec.Command = command
	}
	if !filepath.IsAbs(spec.Cwd) {
		return spec, tools.Errorf(tools.KindUsage, "cannot restore %s: cwd %q is not an absolute path", id, spec.Cwd)
	}
	if fi, err := os.Stat(spec.Cwd); err != nil || !fi.IsDir() {
		return spec, tools.Errorf(tools.KindUsage, "cannot restore %s: its directory %s is gone: restore it with --cwd DIR (terminal_restore {cwd}) to start it in another", id, spec.Cwd).
			WithDetails("cwd", spec.Cwd)
	}
	spec.Owner, spec.Parent, spec.Ancestors = tools.OperatorNode, "", nil
	spec.Record = false // the kept recording is resumed (meta.Recording)
	spec.Name = e.Meta.Name
	return spec, nil
}

// Take removes id's entry for a forget and returns it: ErrNotListed when
// id is not listed; a conflict while a restore is under way.
func (t *Table) Take(id string) (*Entry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.byID[id]
	switch {
	case e == nil:
		return nil, ErrNotListed
	case e.restoring:
		return nil, tools.Errorf(tools.KindConflict, "terminal %q is being restored: forget it after", id)
	}
	delete(t.byID, id)
	return e, nil
}
