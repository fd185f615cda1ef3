package tools

import (
	"errors"
	"sync"
)

// MemoryBudget bounds the memory that the calls of one kind hold together
// while they run or keep what they built (CONTRACT §31: open traces,
// screenshots being drawn, batches, searches). A call says what it will
// hold — an estimate from the structures it builds (frames, keyframes,
// cell grids, pixel surfaces, result lists), not the size of what it was
// asked for — and takes it with Take before building; past the limit it
// is refused at once (never queued: nothing else slows), kind
// unavailable, retryable, with the reason. A grant grows (Grow) or
// shrinks (Set) as the call learns what it really holds, and is given
// back with Release. Safe for concurrent use.
type MemoryBudget struct {
	name  string // what the budget is for, in the error: "open traces", "screenshots"
	limit int64
	// OnRefuse, when set before use (tests), is called for each refusal.
	OnRefuse func(asked, inUse int64)

	mu     sync.Mutex // guards used, grants
	used   int64
	grants int
}

// NewMemoryBudget returns a budget of limit bytes for the calls named
// by name (a plural noun: "open traces", "searches").
func NewMemoryBudget(name string, limit int64) *MemoryBudget {
	return &MemoryBudget{name: name, limit: max(limit, 1)}
}

// ErrMemoryBudget is wrapped by the error of a refused Take or Grow.
var ErrMemoryBudget = errors.New("memory budget spent")

// Limit is the budget in bytes.
func (b *MemoryBudget) Limit() int64 { return b.limit }

// InUse is the bytes the grants hold now.
func (b *MemoryBudget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Grants is the number of grants not yet released.
func (b *MemoryBudget) Grants() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.grants
}

// Take reserves n bytes for a call described by what ("trace_open of
// /x/y.cast"), or refuses: the *Error is KindUnavailable, retryable, with
// details reason "memory", budget, limit_bytes, in_use_bytes and
// asked_bytes. A call larger than the whole budget is refused even when
// nothing else runs (it could never fit).
func (b *MemoryBudget) Take(n int64, what string) (*MemoryGrant, error) {
	n = max(n, 0)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.fitsLocked(n, what); err != nil {
		return nil, err
	}
	b.used += n
	b.grants++
	return &MemoryGrant{b: b, n: n, what: what}, nil
}

func (b *MemoryBudget) fitsLocked(n int64, what string) error {
	if b.used+n <= b.limit {
		return nil
	}
	if b.OnRefuse != nil {
		b.OnRefuse(n, b.used)
	}
	var e *Error
	if n > b.limit {
		e = Errorf(KindUnavailable, "%s would take about %d MB, more than the %d MB all %s may hold together (%w): make it smaller", what, mb(n), mb(b.limit), b.name, ErrMemoryBudget)
	} else {
		e = Errorf(KindUnavailable, "%s would take about %d MB; %s hold %d MB of their %d MB now (%w): retry when one has ended", what, mb(n), b.name, mb(b.used), mb(b.limit), ErrMemoryBudget)
	}
	e.Retryable = true
	return e.WithDetails("reason", "memory").WithDetails("budget", b.name).WithDetails("limit_bytes", b.limit).
		WithDetails("in_use_bytes", b.used).WithDetails("asked_bytes", n)
}

func mb(n int64) int64 { return (n + (1 << 20) - 1) >> 20 }

// MemoryGrant is the memory one call holds of a MemoryBudget.
type MemoryGrant struct {
	b    *MemoryBudget
	what string

	// n is guarded by b.mu.
	n        int64
	released bool
}

// Bytes is what the grant holds now.
func (g *MemoryGrant) Bytes() int64 {
	g.b.mu.Lock()
	defer g.b.mu.Unlock()
	return g.n
}

// Grow takes n more bytes, or refuses as Take does (the grant keeps what
// it held).
func (g *MemoryGrant) Grow(n int64) error {
	if n <= 0 {
		return nil
	}
	g.b.mu.Lock()
	defer g.b.mu.Unlock()
	if g.released {
		return nil
	}
	if err := g.b.fitsLocked(n, g.what); err != nil {
		return err
	}
	g.b.used += n
	g.n += n
	return nil
}

// Set makes the grant hold n bytes, whatever the budget holds otherwise:
// for a call that learned what it really holds and cannot give it back
// (an open trace's keyframes); use Grow where refusing is possible.
func (g *MemoryGrant) Set(n int64) {
	g.b.mu.Lock()
	defer g.b.mu.Unlock()
	if g.released {
		return
	}
	n = max(n, 0)
	g.b.used += n - g.n
	g.n = n
}

// Release gives the grant's bytes back; later calls do nothing.
func (g *MemoryGrant) Release() {
	if g == nil {
		return
	}
	g.b.mu.Lock()
	defer g.b.mu.Unlock()
	if g.released {
		return
	}
	g.released = true
	g.b.used -= g.n
	g.b.grants--
	g.n = 0
}
