package screen

// histEntry records what one revision changed.
type histEntry struct {
	textStart uint64   // text-log offset at which this revision's text begins
	all       bool     // every row changed (resize)
	rows      []uint64 // bitset of the rows whose text changed
}

// history is a ring of the last max revisions. Guarded by Screen.mu.
//
// The ring starts small and doubles up to max as revisions come, so a
// quiet screen does not hold max entries (160 KiB at the default 4096).
type history struct {
	ring  []histEntry
	max   int
	count int // entries filled, ≤ len(ring)
}

// initialHistory is the ring's first size.
const initialHistory = 16

func newHistory(n int) history {
	return history{ring: make([]histEntry, min(n, initialHistory)), max: n}
}

// add records revision rev and returns its entry, cleared, for the caller to
// fill. The entry's bitset has room for rows rows.
func (h *history) add(rev uint64, rows int) *histEntry {
	if h.count == len(h.ring) && len(h.ring) < h.max {
		h.grow(rev - 1)
	}
	e := &h.ring[rev%uint64(len(h.ring))]
	words := (rows + 63) / 64
	if cap(e.rows) < words {
		e.rows = make([]uint64, words)
	} else {
		e.rows = e.rows[:words]
		clear(e.rows)
	}
	e.all = false
	e.textStart = 0
	if h.count < len(h.ring) {
		h.count++
	}
	return e
}

// grow doubles the ring (up to max), keeping the entries of the count
// revisions up to cur at their places in the new ring.
func (h *history) grow(cur uint64) {
	ring := make([]histEntry, min(2*len(h.ring), h.max))
	for i := range h.count {
		r := cur - uint64(i)
		ring[r%uint64(len(ring))] = h.ring[r%uint64(len(h.ring))]
	}
	h.ring = ring
}

// entry returns the entry of revision rev, which must be within the kept
// window (see oldest).
func (h *history) entry(rev uint64) *histEntry {
	return &h.ring[rev%uint64(len(h.ring))]
}

// oldest returns the oldest revision whose successors are all kept: the
// smallest base revision ChangesSince/TextSince can answer for.
func (h *history) oldest(cur uint64) uint64 {
	return cur - uint64(h.count)
}

func (e *histEntry) set(row int) { e.rows[row/64] |= 1 << (row % 64) }
