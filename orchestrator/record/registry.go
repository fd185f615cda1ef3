package record

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// MaxOpenTraces is how many traces a Registry keeps open.
const MaxOpenTraces = 8

// Registry holds the open traces of a tool server, by id ("trace-1",
// "trace-2", …; ids are not reused). Opening one more than MaxOpenTraces
// closes the coldest (least recently used). It is safe for concurrent use.
type Registry struct {
	mu     sync.Mutex
	next   int
	tick   uint64
	traces map[string]*regEntry
}

type regEntry struct {
	id    string
	t     *Trace
	used  uint64
	key   string // absolute path
	stamp string // size and modification times of the files when opened
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{traces: map[string]*regEntry{}}
}

// Open opens the trace at path and returns its id. If the same path is
// already open and its files have not changed, that trace is returned
// again. If MaxOpenTraces were open, the coldest is closed first and its
// id returned as evicted (else evicted is "").
func (r *Registry) Open(path string) (id string, t *Trace, evicted string, err error) {
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
			return e.id, e.t, "", nil
		}
	}
	r.mu.Unlock()

	t, err = Open(path)
	if err != nil {
		return "", nil, "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var victim *regEntry
	if len(r.traces) >= MaxOpenTraces {
		for _, e := range r.traces {
			if victim == nil || e.used < victim.used {
				victim = e
			}
		}
		delete(r.traces, victim.id)
		victim.t.Close()
		evicted = victim.id
	}
	r.next++
	r.tick++
	id = "trace-" + strconv.Itoa(r.next)
	r.traces[id] = &regEntry{id: id, t: t, used: r.tick, key: key, stamp: stamp}
	return id, t, evicted, nil
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

// Get returns an open trace and marks it used.
func (r *Registry) Get(id string) (*Trace, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.traces[id]
	if e == nil {
		return nil, r.notFound(id)
	}
	r.tick++
	e.used = r.tick
	return e.t, nil
}

func (r *Registry) notFound(id string) error {
	ids := r.idsLocked()
	msg := fmt.Sprintf("no open trace %q (it may have been closed as the coldest of %d)", id, MaxOpenTraces)
	if len(ids) == 0 {
		msg += "; no trace is open: trace_open one"
	} else {
		msg += "; open traces: " + strings.Join(ids, ", ")
	}
	return tools.Errorf(tools.KindNotFound, "%s", msg).WithDetails("traces", ids)
}

// Close closes an open trace.
func (r *Registry) Close(id string) error {
	r.mu.Lock()
	e := r.traces[id]
	if e == nil {
		err := r.notFound(id)
		r.mu.Unlock()
		return err
	}
	delete(r.traces, id)
	r.mu.Unlock()
	return e.t.Close()
}

// CloseAll closes every open trace.
func (r *Registry) CloseAll() {
	r.mu.Lock()
	entries := r.traces
	r.traces = map[string]*regEntry{}
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
