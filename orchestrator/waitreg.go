package orchestrator

import (
	"slices"
	"sync"
)

// Text and regex waits are evaluated by the pump, not woken per revision.
//
// Woken at every revision bump, each waiting goroutine took a turn —
// a scheduler wake-up, a few locks, a look at the new text — and during a
// flood, with a bump per chunk of output, eight waits cost the
// orchestrator about half as much CPU again as one, almost none of it in
// the search itself. A wait registers its scan with its node instead; the
// pump, the only goroutine that changes the mirror, gives every
// registered scan its turn right after it applied output or reseeded, and
// wakes a waiter only when its condition holds. The waiting goroutine
// still takes a turn when it starts and when the node's status changes.

// scanReg is one registered text or regex wait.
type scanReg struct {
	mu    sync.Mutex // guards scan, ok and m: the pump and the waiter take turns
	scan  *textScan
	ok    bool
	m     string
	ready chan struct{} // closed when the condition holds
}

// eval gives the scan a turn unless its condition already held.
func (r *scanReg) eval(n *node, rc *rowsCache) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ok {
		if ok, m := r.scan.match(n, rc); ok {
			r.ok, r.m = true, m
			close(r.ready)
		}
	}
	return r.ok, r.m
}

// addScan registers a wait's scan with the node.
func (n *node) addScan(s *textScan) *scanReg {
	r := &scanReg{scan: s, ready: make(chan struct{})}
	n.scanMu.Lock()
	n.scans = append(n.scans, r)
	n.scanMu.Unlock()
	return r
}

// removeScan unregisters it (when its wait returns).
func (n *node) removeScan(r *scanReg) {
	n.scanMu.Lock()
	n.scans = slices.DeleteFunc(n.scans, func(x *scanReg) bool { return x == r })
	n.scanMu.Unlock()
}

// evalScans gives every registered scan a turn. The pump calls it after
// it changed the mirror.
func (n *node) evalScans() {
	n.scanMu.Lock()
	if len(n.scans) == 0 {
		n.scanMu.Unlock()
		return
	}
	regs := slices.Clone(n.scans)
	n.scanMu.Unlock()
	var rc rowsCache
	for _, r := range regs {
		r.eval(n, &rc)
	}
}
