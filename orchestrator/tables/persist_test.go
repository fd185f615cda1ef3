package tables

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// counterTable is a table of one number for the persister's tests: each
// change adds one, and the file holds the number.
type counterTable struct {
	mu sync.Mutex // guards n
	n  int
}

func (c *counterTable) change() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *counterTable) snapshot() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return []byte(strconv.Itoa(c.n)), nil
}

// gatedWrites blocks the persister's first write until release is
// closed, and counts the writes.
type gatedWrites struct {
	entered chan struct{} // closed when the first write waits
	release chan struct{}
	mu      sync.Mutex // guards writes
	writes  int
}

func gate(p *Persister) *gatedWrites {
	g := &gatedWrites{entered: make(chan struct{}), release: make(chan struct{})}
	p.SetBeforeWrite(func() {
		g.mu.Lock()
		g.writes++
		first := g.writes == 1
		g.mu.Unlock()
		if first {
			close(g.entered)
			<-g.release
		}
	})
	return g
}

func (g *gatedWrites) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.writes
}

func newCounterPersister(t *testing.T) (*counterTable, *Persister, string) {
	t.Helper()
	dir := t.TempDir()
	st := NewStore(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	tab := &counterTable{}
	return tab, NewPersister(st, "counter.json", tab.snapshot), filepath.Join(dir, Dir, "counter.json")
}

func readCounter(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatalf("%s holds %q: %v", path, b, err)
	}
	return n
}

// Changes marked while a write is under way make exactly one next write,
// which holds the last of them; close ends the goroutine.
func TestPersistCoalesces(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tab, p, path := newCounterPersister(t)
	g := gate(p)
	tab.change()
	p.Mark()
	<-g.entered // the first write holds the snapshot of 1
	for range 10 {
		tab.change()
		p.Mark()
	}
	close(g.release)
	// A sync made now would add a write of its own; close waits for the
	// goroutine instead, which writes what is marked before it ends.
	p.Close()
	if n := g.count(); n != 2 {
		t.Fatalf("%d writes for one change and 10 during its write, want 2", n)
	}
	if n := readCounter(t, path); n != 11 {
		t.Fatalf("the file holds %d, want 11", n)
	}
}

// Sync returns only once a write that began after it is on disk, and
// callers that come while a write is under way share the next one.
func TestPersistSyncGroupCommit(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tab, p, path := newCounterPersister(t)
	defer p.Close()
	g := gate(p)
	tab.change()
	p.Mark()
	<-g.entered
	// Two callers change the table and wait, while the first write (of 1)
	// is blocked: theirs is the next one.
	var flights []*flight
	for range 2 {
		tab.change()
		flights = append(flights, p.begin())
	}
	if flights[0] != flights[1] {
		t.Fatal("two callers during one write wait on different writes")
	}
	select {
	case <-flights[0].done:
		t.Fatal("sync's write ended while the write before it was still blocked")
	default:
	}
	close(g.release)
	for _, f := range flights {
		if err := p.wait(context.Background(), f); err != nil {
			t.Fatal(err)
		}
	}
	if n := readCounter(t, path); n != 3 {
		t.Fatalf("after sync the file holds %d, want 3", n)
	}
	if n := g.count(); n != 2 {
		t.Fatalf("%d writes, want 2 (the blocked one and one shared by both callers)", n)
	}
	// A sync alone writes at once.
	tab.change()
	if err := p.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := readCounter(t, path); n != 4 {
		t.Fatalf("after sync the file holds %d, want 4", n)
	}
}

// Sync returns the write's error with its cause; after Close, Mark and
// Sync write themselves.
func TestPersistErrorsAndAfterClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tab := &counterTable{}
	bad := NewPersister(&Store{dir: filepath.Join(blocker, "sub"), log: slog.New(slog.NewTextHandler(io.Discard, nil))}, "x.json", tab.snapshot)
	err := bad.Sync(context.Background())
	bad.Close()
	if !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("sync into a directory under a file: %v, want ENOTDIR", err)
	}

	tab, p, path := newCounterPersister(t)
	tab.change()
	p.Mark()
	p.Close()
	p.Close() // twice is fine
	tab.change()
	p.Mark()
	if n := readCounter(t, path); n != 2 {
		t.Fatalf("a mark after close: the file holds %d, want 2", n)
	}
	tab.change()
	if err := p.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := readCounter(t, path); n != 3 {
		t.Fatalf("a sync after close: the file holds %d, want 3", n)
	}
}

// A cancelled caller stops waiting; the write still happens.
func TestPersistSyncCancelled(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tab, p, path := newCounterPersister(t)
	g := gate(p)
	tab.change()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := p.begin()
	<-g.entered
	if err := p.wait(ctx, f); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v", err)
	}
	close(g.release)
	p.Close()
	if n := readCounter(t, path); n != 1 {
		t.Fatalf("the file holds %d, want 1", n)
	}
}
