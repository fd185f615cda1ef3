// Package memtrim returns memory to the system after a flood of output
// (issue 27, docs/PERFORMANCE.md "Memory comes back"): a meter of the
// output every pump took in, armed by a quiet node's trim, that calls
// debug.FreeOSMemory a moment after the flood calmed instead of waiting
// for the runtime's background scavenger. It knows nothing of nodes.
package memtrim

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// FreeOSEvery is the output, in bytes, that must have gone through since
// the last return of memory for quiet nodes to trigger the next.
const FreeOSEvery = 4 << 20

// FreeOSQuiet is how long after the last node's trim the memory is
// returned, if by then the output has calmed (less than FreeOSCalm bytes
// in that time; else it looks again a FreeOSQuiet later): the nodes of one
// flood go quiet within moments of each other, and one collection after
// the last of them returns what all of them let go.
const (
	FreeOSQuiet = time.Second
	FreeOSCalm  = 1 << 20
)

// Meter counts the output bytes taken in by every pump of an engine and
// returns memory to the system once a flood has calmed. The zero value
// is ready.
type Meter struct {
	// FreeOS returns the free heap to the system; nil means
	// debug.FreeOSMemory (tests count the calls). Set before use.
	FreeOS func()

	seen    atomic.Uint64 // output bytes taken in by every pump
	freedAt atomic.Uint64 // seen at the last return of memory

	mu       sync.Mutex  // guards timer and lastSeen
	timer    *time.Timer // returns the memory once the output has calmed
	armed    bool        // the timer is set
	lastSeen uint64      // seen when the timer was set
}

// Add counts output taken in.
func (m *Meter) Add(n uint64) { m.seen.Add(n) }

// Quiet is a node's trim, own the output the node took in since its last
// trim: when enough output went through the engine since the last return
// of memory, or through this node (its buffers, let go only now, grew
// with it: a node whose flood outlasted the others' trims after their
// return), it arms the return (unless it is armed already).
func (m *Meter) Quiet(own uint64) {
	seen := m.seen.Load()
	if seen-m.freedAt.Load() < FreeOSEvery && own < FreeOSEvery {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.armed {
		return
	}
	m.armed, m.lastSeen = true, seen
	if m.timer == nil {
		m.timer = time.AfterFunc(FreeOSQuiet, m.fire)
		return
	}
	m.timer.Reset(FreeOSQuiet)
}

// fire runs on the timer's goroutine: it returns the free heap to the
// system if the output has calmed, else looks again later.
func (m *Meter) fire() {
	seen := m.seen.Load()
	m.mu.Lock()
	if seen-m.lastSeen >= FreeOSCalm {
		m.lastSeen = seen
		m.timer.Reset(FreeOSQuiet)
		m.mu.Unlock()
		return
	}
	m.armed = false
	m.mu.Unlock()
	m.freedAt.Store(seen)
	if m.FreeOS != nil {
		m.FreeOS()
	} else {
		debug.FreeOSMemory()
	}
}

// Stop ends a pending return (the engine's Close).
func (m *Meter) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.timer != nil {
		m.timer.Stop()
	}
}

// Seen is the output counted so far; FreedAt what it was at the last
// return of memory.
func (m *Meter) Seen() uint64    { return m.seen.Load() }
func (m *Meter) FreedAt() uint64 { return m.freedAt.Load() }
