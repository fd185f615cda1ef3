package orchestrator

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Memory comes back after a flood (issue 27, docs/PERFORMANCE.md "Memory
// comes back"): when a node's output has been quiet for RestAfter, its
// pump trims the buffers the burst grew (the pane stream's two buffers,
// up to the 8 MiB backlog bound each, and the text log's spare
// capacity), and, when at least freeOSEvery bytes of output went through
// the orchestrator since the last time, returns the freed heap to the
// system a moment after the last of them (debug.FreeOSMemory) instead of waiting for the
// runtime's background scavenger. A full collection per 4 MiB of output (at
// most one a second) costs far less than taking in the 4 MiB did.

// freeOSEvery is the output, in bytes, that must have gone through since
// the last return of memory for quiet nodes to trigger the next.
const freeOSEvery = 4 << 20

// freeOSQuiet is how long after the last node's trim the memory is
// returned, if by then the output has calmed (less than freeOSCalm bytes
// in that time; else it looks again a freeOSQuiet later): the nodes of one
// flood go quiet within moments of each other, and one collection after
// the last of them returns what all of them let go.
const (
	freeOSQuiet = time.Second
	freeOSCalm  = 1 << 20
)

// outputMeter counts the output bytes taken in by every pump and returns
// memory to the system once a flood has calmed.
type outputMeter struct {
	seen    atomic.Uint64 // output bytes taken in by every pump
	freedAt atomic.Uint64 // seen at the last return of memory

	mu       sync.Mutex  // guards timer and lastSeen
	timer    *time.Timer // returns the memory once the output has calmed
	armed    bool        // the timer is set
	lastSeen uint64      // seen when the timer was set
}

// add counts output taken in.
func (m *outputMeter) add(n uint64) { m.seen.Add(n) }

// quiet is a node's trim: when enough output went through since the last
// return of memory, it arms the return (unless it is armed already).
func (m *outputMeter) quiet() {
	seen := m.seen.Load()
	if seen-m.freedAt.Load() < freeOSEvery {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.armed {
		return
	}
	m.armed, m.lastSeen = true, seen
	if m.timer == nil {
		m.timer = time.AfterFunc(freeOSQuiet, m.fire)
		return
	}
	m.timer.Reset(freeOSQuiet)
}

// fire runs on the timer's goroutine: it returns the free heap to the
// system if the output has calmed, else looks again later.
func (m *outputMeter) fire() {
	seen := m.seen.Load()
	m.mu.Lock()
	if seen-m.lastSeen >= freeOSCalm {
		m.lastSeen = seen
		m.timer.Reset(freeOSQuiet)
		m.mu.Unlock()
		return
	}
	m.armed = false
	m.mu.Unlock()
	m.freedAt.Store(seen)
	freeOSMemory()
}

// stop ends a pending return (Close).
func (m *outputMeter) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.timer != nil {
		m.timer.Stop()
	}
}

// freeOSMemory is debug.FreeOSMemory (a variable for the tests).
var freeOSMemory = debug.FreeOSMemory

// trim gives back what the node's last burst of output grew, and arms the
// return of the heap the bursts left free. Only the pump calls it, when
// the output has been quiet for RestAfter.
func (n *node) trim() {
	n.stream.Trim()
	n.scr.TrimMemory()
	n.o.output.quiet()
}
