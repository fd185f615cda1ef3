package screen

// histEntry records what one revision changed.
type histEntry struct {
	textStart uint64   // text-log offset at which this revision's text begins
	all       bool     // every row changed (resize)
	rows      []uint64 // bitset of the rows whose text changed
}

// history is a ring of the last len(ring) revisions. Guarded by Screen.mu.
type history struct {
	ring  []histEntry
	count int // entries filled, ≤ len(ring)
}

func newHistory(n int) history {
	return history{ring: make([]histEntry, n)}
}

// add records revision rev and returns its entry, cleared, for the caller to
// fill. The entry's bitset has room for rows rows.
func (h *history) add(rev uint64, rows int) *histEntry {
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
