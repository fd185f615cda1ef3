// Package tables holds the tool server's tables on disk: each table is
// written whole and atomically by its own group-commit Persister into
// <state>/toolserver/, and read once at start (Store.Load). It knows
// nothing of nodes, the engine or HTTP.
package tables

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/termsprawl/termsprawl/tools"
)

// The tool server's own tables on disk keep, across an orchestrator
// restart, agents' tasks, open dialogs, "always" answers, watches and
// reported states (CONTRACT §16); the file names are the tool server's.
// Every entry carries the incarnation it belongs to. A table is written
// whole and atomically (temp file, fsync, rename) by its persister: the
// table's change calls Mark (written soon, the caller goes on) or Sync
// (the caller waits until a write that began after the call is on disk;
// concurrent callers share that write). The persister marshals the table
// under the table's mutex and writes outside it, one write at a time, so
// the file always holds one state of the table and a slow disk never
// holds a report or a read. Tasks, dialogs, "always" answers, watches and
// worktrees are synced before they are handed out; agents' reported
// states are marked, so a kill -9 loses at most the reports of the last
// write's few milliseconds, which the process and screen evidence
// corrects (docs/CHOICES.md). Close writes what is marked and ends the
// persister: a clean shutdown loses nothing. Tables are read once at
// start with a size bound; entries of incarnations that are no longer
// alive (the node closed while no orchestrator ran) are dropped at load,
// so a new node that reuses an id inherits nothing.

// Dir is the directory of the tables under the state dir.
const Dir = "toolserver"

// maxBytes bounds one table file at load (the quotas keep real
// tables far below it).
const maxBytes = 16 << 20

// Store reads and writes the table files.
type Store struct {
	dir string // "" keeps everything in memory (no state dir)
	log *slog.Logger
}

// NewStore is the store of the tables under stateDir ("" keeps them in memory only).
func NewStore(stateDir string, log *slog.Logger) *Store {
	if stateDir == "" {
		return &Store{log: log}
	}
	return &Store{dir: filepath.Join(stateDir, Dir), log: log}
}

// write writes data as the named table. A failure is logged and
// returned; most callers go on (the table in memory stays right, and the
// next change writes it again), but one that hands out something that
// must survive a restart (a dialog id) refuses it.
func (st *Store) write(name string, data []byte) error {
	if st == nil || st.dir == "" {
		return nil
	}
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		st.log.Warn("persist table", "file", name, "err", err)
		return fmt.Errorf("persist %s: %w", name, err)
	}
	if err := tools.WriteFileAtomic(filepath.Join(st.dir, name), data); err != nil {
		st.log.Warn("persist table", "file", name, "err", err)
		return fmt.Errorf("persist %s: %w", name, err)
	}
	return nil
}

// Marshal is a table's file content (indented JSON and a newline).
func Marshal(name string, v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("persist %s: marshal: %w", name, err)
	}
	return append(data, '\n'), nil
}

// Persister writes one table's file: group commit. mark and sync are
// called without the table's mutex (snapshot takes it). Its goroutine
// starts at the first change and ends in close, after a last write of
// what is marked; after close, mark and sync write at once themselves.
type Persister struct {
	name     string
	store    *Store
	snapshot func() ([]byte, error) // the table's content; takes the table's mutex

	// beforeWrite, when set (tests: SetBeforeWrite), runs before each
	// write, after the snapshot.
	beforeWrite func()

	writeMu sync.Mutex // held across one snapshot and its write: one write at a time, in order

	mu      sync.Mutex // guards dirty, next, running, closed
	dirty   bool       // changed since the last snapshot began
	next    *flight    // the write that begins next
	running bool       // the goroutine was started
	closed  bool

	kick  chan struct{} // one pending wake of the goroutine
	stop  chan struct{} // closed by close
	ended chan struct{} // closed when the goroutine returned
}

// flight is one write; done is closed when it ended, err is then its
// outcome.
type flight struct {
	done chan struct{}
	err  error
}

// NewPersister is the persister of the table file name; snapshot is the
// table's content, taken under the table's mutex.
func NewPersister(st *Store, name string, snapshot func() ([]byte, error)) *Persister {
	return &Persister{name: name, store: st, snapshot: snapshot, next: &flight{done: make(chan struct{})},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), ended: make(chan struct{})}
}

// off reports whether nothing is written (no state dir).
func (p *Persister) off() bool { return p.store == nil || p.store.dir == "" }

// Mark records a change to write soon; it does not wait for the disk.
func (p *Persister) Mark() {
	if p.off() {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = p.writeNow()
		return
	}
	p.dirty = true
	p.startLocked()
	p.mu.Unlock()
	p.wake()
}

// Sync records a change and waits until a write that began after the call
// ended; it returns that write's error, or ctx's if it ends first (the
// write still happens).
func (p *Persister) Sync(ctx context.Context) error {
	return p.wait(ctx, p.begin())
}

// begin is Sync's first half: the change is recorded, and the write that
// will hold it returned (nil when nothing is written: no state dir).
func (p *Persister) begin() *flight {
	if p.off() {
		return nil
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		f := &flight{done: make(chan struct{}), err: p.writeNow()}
		close(f.done)
		return f
	}
	p.dirty = true
	f := p.next
	p.startLocked()
	p.mu.Unlock()
	p.wake()
	return f
}

// wait is Sync's second half.
func (p *Persister) wait(ctx context.Context, f *flight) error {
	if f == nil {
		return nil
	}
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return fmt.Errorf("persist %s: %w", p.name, ctx.Err())
	}
}

func (p *Persister) startLocked() {
	if !p.running {
		p.running = true
		go p.loop()
	}
}

func (p *Persister) wake() {
	select {
	case p.kick <- struct{}{}:
	default: // a wake is pending: the change rides on it
	}
}

// loop is the persister's goroutine: one write per wake while changes
// come, and a last one at close.
func (p *Persister) loop() {
	defer close(p.ended)
	for {
		select {
		case <-p.kick:
			p.flush()
		case <-p.stop:
			p.flush()
			return
		}
	}
}

// flush writes the table if it changed; the waiters of the write are
// told its outcome.
func (p *Persister) flush() {
	p.mu.Lock()
	if !p.dirty {
		p.mu.Unlock()
		return
	}
	p.dirty = false
	f := p.next
	p.next = &flight{done: make(chan struct{})}
	p.mu.Unlock()
	f.err = p.writeNow()
	close(f.done)
}

// writeNow snapshots the table and writes it.
func (p *Persister) writeNow() error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	data, err := p.snapshot()
	if err != nil {
		p.store.log.Warn("persist table", "file", p.name, "err", err)
		return err
	}
	if p.beforeWrite != nil {
		p.beforeWrite()
	}
	return p.store.write(p.name, data)
}

// Close writes what is marked and ends the goroutine; later changes are
// written by their callers. It may be called more than once.
func (p *Persister) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	running := p.running
	p.mu.Unlock()
	if running {
		close(p.stop)
		<-p.ended
	}
}

// Load reads the named table into v; a missing file leaves v as it is.
func (st *Store) Load(name string, v any) error {
	if st == nil || st.dir == "" {
		return nil
	}
	path := filepath.Join(st.dir, name)
	b, err := tools.ReadFileBounded(path, maxBytes)
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

// SetBeforeWrite makes f run before each write, after the snapshot: a
// test's gate that holds a write to widen a window. Call it before the
// table's first change.
func (p *Persister) SetBeforeWrite(f func()) { p.beforeWrite = f }
