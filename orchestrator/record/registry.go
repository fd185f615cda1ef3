package record

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// MaxOpenTraces is how many traces a Registry keeps open.
const MaxOpenTraces = 8

// TraceMemoryBudget bounds the memory the open traces of a Registry hold
// together, and the traces being opened, as Trace.MemoryBytes counts it
// (their files, the index of their events, their replay screens and
// keyframes; CONTRACT §31). Opening past it closes the coldest open
// traces that make room; when those cannot (opens under way hold the
// rest, or the trace alone is larger) the open is refused, unavailable
// and retryable, with the reason. A trace's keyframes growing past it
// close the coldest others. The Go heap's own headroom comes on top
// (up to as much again at the peak of a collection cycle), so 192 MB of
// traces stays under the 500 MB of §31's four 40 MB casts at once.
const TraceMemoryBudget = 192 << 20

// MaxConcurrentOpens is how many traces are read and parsed at once; more
// trace_open calls wait their turn (each open briefly holds about twice
// its file in memory).
const MaxConcurrentOpens = 2

// Registry holds the open traces of a tool server, by id ("trace-1",
// "trace-2", …; ids are not reused). Opening one more than MaxOpenTraces,
// or past the memory budget, closes the coldest (least recently used). It
// is safe for concurrent use.
type Registry struct {
	mu      sync.Mutex
	next    int
	tick    uint64
	traces  map[string]*regEntry
	mem     *tools.MemoryBudget // the open traces' grants and the opens' under way
	opening chan struct{}       // a slot per open being read
}

type regEntry struct {
	id    string
	t     *Trace
	used  uint64
	key   string // absolute path
	stamp string // size and modification times of the files when opened
	grant *tools.MemoryGrant
}

// NewRegistry returns an empty Registry with the TraceMemoryBudget.
func NewRegistry() *Registry {
	return NewRegistryBudget(TraceMemoryBudget)
}

// NewRegistryBudget returns an empty Registry whose open traces hold at
// most budget bytes together (tests make it small).
func NewRegistryBudget(budget int64) *Registry {
	return &Registry{traces: map[string]*regEntry{}, mem: tools.NewMemoryBudget("open traces", budget), opening: make(chan struct{}, MaxConcurrentOpens)}
}

// Open opens the trace at path and returns its id. If the same path is
// already open and its files have not changed, that trace is returned
// again. If MaxOpenTraces were open or the memory budget is spent, the
// coldest are closed first and their ids returned as evicted (else
// evicted is empty).
func (r *Registry) Open(path string) (id string, t *Trace, evicted []string, err error) {
	key, err := filepath.Abs(path)
	if err != nil {
		key = path
	}
	stamp := fileStamp(key)
	r.mu.Lock()
	for _, e := range r.traces {
		if e.key == key && e.stamp == stamp && stamp != "" {
			r.tick++
			e.used = r.tick
			r.mu.Unlock()
			return e.id, e.t, nil, nil
		}
	}
	r.mu.Unlock()

	// The memory is taken before it is held: the files' bytes before
	// reading them, the index and screens before parsing, the rest once
	// parsed (tools.MemoryBudget). Cold traces are closed to make room;
	// past that the open is refused.
	what := "trace_open of " + path
	grant, victims, err := r.take(nil, filesSize(key)+64<<10, what)
	closed := closeVictims(victims)
	if err != nil {
		return "", nil, closed, err
	}
	r.opening <- struct{}{}
	files, err := readFiles(path)
	if err == nil {
		grant, victims, err = r.take(grant, estimateFiles(files)-grant.Bytes(), what)
		closed = append(closed, closeVictims(victims)...)
		if err == nil {
			t, err = openFiles(path, files)
		}
	}
	<-r.opening
	if err != nil {
		grant.Release()
		return "", nil, closed, err
	}
	grant.Set(t.MemoryBytes())
	r.mu.Lock()
	if len(r.traces) >= MaxOpenTraces {
		victims = append(victims[:0], r.coldestLocked(""))
	} else {
		victims = victims[:0]
	}
	r.next++
	r.tick++
	id = "trace-" + strconv.Itoa(r.next)
	r.traces[id] = &regEntry{id: id, t: t, used: r.tick, key: key, stamp: stamp, grant: grant}
	victims = append(victims, r.trimLocked(id)...)
	r.mu.Unlock()
	return id, t, append(closed, closeVictims(victims)...), nil
}

// take reserves n more bytes for an open (a new grant when g is nil),
// removing the coldest open traces while that makes it fit; it returns
// the traces removed (the caller closes them) and, when nothing more can
// be removed, the budget's refusal. A trace larger than the whole budget
// is refused without closing any.
func (r *Registry) take(g *tools.MemoryGrant, n int64, what string) (*tools.MemoryGrant, []*regEntry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var victims []*regEntry
	for {
		var err error
		switch {
		case g == nil:
			g, err = r.mem.Take(n, what)
			if err != nil && n > r.mem.Limit() {
				return nil, nil, err
			}
		default:
			err = g.Grow(n)
			if err != nil && g.Bytes()+n > r.mem.Limit() {
				return g, victims, err
			}
		}
		if err == nil {
			return g, victims, nil
		}
		v := r.coldestLocked("")
		if v == nil {
			return g, victims, err
		}
		v.grant.Release()
		victims = append(victims, v)
	}
}

// coldestLocked removes and returns the least recently used entry other
// than keep, its memory given back. Called with mu held and at least one other entry.
func (r *Registry) coldestLocked(keep string) *regEntry {
	var victim *regEntry
	for _, e := range r.traces {
		if e.id != keep && (victim == nil || e.used < victim.used) {
			victim = e
		}
	}
	if victim != nil {
		delete(r.traces, victim.id)
		victim.grant.Release()
	}
	return victim
}

// trimLocked removes the coldest entries other than keep while the open
// traces hold more than the budget. Called with mu held.
func (r *Registry) trimLocked(keep string) []*regEntry {
	var out []*regEntry
	for _, e := range r.traces {
		e.grant.Set(e.t.MemoryBytes())
	}
	for r.mem.InUse() > r.mem.Limit() && len(r.traces) > 1 {
		v := r.coldestLocked(keep)
		if v == nil {
			return out
		}
		v.grant.Release()
		out = append(out, v)
	}
	return out
}

// closeVictims closes evicted traces (outside the registry's lock) and
// returns their ids. Their memory goes back to the operating system: a
// closed trace's hundreds of megabytes would otherwise stay in the
// process.
func closeVictims(victims []*regEntry) []string {
	var ids []string
	var freed int64
	for _, v := range victims {
		if v == nil {
			continue
		}
		freed += v.t.MemoryBytes()
		v.t.Close()
		ids = append(ids, v.id)
	}
	releaseMemory(freed)
	return ids
}

// releaseMemory hands freed memory back to the operating system when it
// is worth a full collection (16 MB or more).
func releaseMemory(freed int64) {
	if freed >= 16<<20 {
		go debug.FreeOSMemory()
	}
}

// fileStamp identifies the state of a trace's files.
func fileStamp(p string) string {
	st, err := os.Stat(p)
	if err != nil {
		return ""
	}
	stamp := func(st os.FileInfo) string {
		return strconv.FormatInt(st.Size(), 10) + "@" + st.ModTime().Format(time.RFC3339Nano)
	}
	if !st.IsDir() {
		return stamp(st)
	}
	var parts []string
	for _, name := range []string{MetaFile, CastFile, EventsFile} {
		if fs, err := os.Stat(filepath.Join(p, name)); err == nil {
			parts = append(parts, name+"="+stamp(fs))
		}
	}
	return strings.Join(parts, ";")
}

// Get returns an open trace and marks it used. Keyframes grow a trace
// after it is opened: past the budget, the coldest others are closed.
func (r *Registry) Get(id string) (*Trace, error) {
	r.mu.Lock()
	e := r.traces[id]
	if e == nil {
		err := r.notFound(id)
		r.mu.Unlock()
		return nil, err
	}
	r.tick++
	e.used = r.tick
	victims := r.trimLocked(id)
	r.mu.Unlock()
	closeVictims(victims)
	return e.t, nil
}

// MemoryBytes is the memory the open traces hold together (estimated).
func (r *Registry) MemoryBytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var total int64
	for _, e := range r.traces {
		total += e.t.MemoryBytes()
	}
	return total
}

func (r *Registry) notFound(id string) error {
	ids := r.idsLocked()
	msg := fmt.Sprintf("no open trace %q (it may have been closed, or closed as the coldest of %d or to keep the open traces within %d MB)", id, MaxOpenTraces, r.mem.Limit()>>20)
	if len(ids) == 0 {
		msg += "; no trace is open: trace_open one"
	} else {
		msg += "; open traces: " + strings.Join(ids, ", ")
	}
	return tools.Errorf(tools.KindNotFound, "%s", msg).WithDetails("traces", ids)
}

// Close closes an open trace and frees its memory.
func (r *Registry) Close(id string) error {
	r.mu.Lock()
	e := r.traces[id]
	if e == nil {
		err := r.notFound(id)
		r.mu.Unlock()
		return err
	}
	delete(r.traces, id)
	e.grant.Release()
	r.mu.Unlock()
	closeVictims([]*regEntry{e})
	return nil
}

// CloseAll closes every open trace.
func (r *Registry) CloseAll() {
	r.mu.Lock()
	entries := r.traces
	r.traces = map[string]*regEntry{}
	for _, e := range entries {
		e.grant.Release()
	}
	r.mu.Unlock()
	for _, e := range entries {
		e.t.Close()
	}
}

// IDs returns the ids of the open traces, in opening order.
func (r *Registry) IDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.idsLocked()
}

func (r *Registry) idsLocked() []string {
	ids := make([]string, 0, len(r.traces))
	for id := range r.traces {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.TrimPrefix(ids[i], "trace-"))
		b, _ := strconv.Atoi(strings.TrimPrefix(ids[j], "trace-"))
		return a < b
	})
	return ids
}
