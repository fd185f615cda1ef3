package textwait

import "sync"

// Reg is a scan registered for turns by two goroutines: the one that
// changes the source (after each change) and the waiter (when it starts
// and when the terminal's status changes). Its mutex makes them take
// turns; Ready is closed when the condition holds.
type Reg struct {
	mu    sync.Mutex // guards scan, ok and m
	scan  *Scan
	ok    bool
	m     string
	ready chan struct{}
}

// NewReg registers s.
func NewReg(s *Scan) *Reg { return &Reg{scan: s, ready: make(chan struct{})} }

// Eval gives the scan a turn unless its condition already held, and
// reports whether it holds and what matched.
func (r *Reg) Eval(src Source, rc *RowsCache) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ok {
		if ok, m := r.scan.Match(src, rc); ok {
			r.ok, r.m = true, m
			close(r.ready)
		}
	}
	return r.ok, r.m
}

// Ready is closed when the condition holds.
func (r *Reg) Ready() <-chan struct{} { return r.ready }
