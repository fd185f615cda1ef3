package node

import (
	"slices"

	"github.com/termsprawl/termsprawl/orchestrator/textwait"
)

// Text and regex waits are evaluated by the pump, not woken per revision.
//
// Woken at every revision bump, each waiting goroutine took a turn —
// a scheduler wake-up, a few locks, a look at the new text — and during a
// flood, with a bump per chunk of output, eight waits cost the
// orchestrator about half as much CPU again as one, almost none of it in
// the search itself. A wait registers its scan (textwait.Reg) with its
// node instead; the pump, the only goroutine that changes the mirror,
// gives every registered scan its turn right after it applied output or
// reseeded, and wakes a waiter only when its condition holds. The waiting
// goroutine still takes a turn when it starts and when the node's status
// changes; the Reg's mutex makes the two take turns.

// addScan registers a wait's scan with the node.
func (n *Node) addScan(s *textwait.Scan) *textwait.Reg {
	r := textwait.NewReg(s)
	n.scanMu.Lock()
	n.scans = append(n.scans, r)
	n.scanMu.Unlock()
	return r
}

// removeScan unregisters it (when its wait returns).
func (n *Node) removeScan(r *textwait.Reg) {
	n.scanMu.Lock()
	n.scans = slices.DeleteFunc(n.scans, func(x *textwait.Reg) bool { return x == r })
	n.scanMu.Unlock()
}

// evalScans gives every registered scan a turn. The pump calls it after
// it changed the mirror.
func (n *Node) evalScans() {
	n.scanMu.Lock()
	if len(n.scans) == 0 {
		n.scanMu.Unlock()
		return
	}
	regs := slices.Clone(n.scans)
	n.scanMu.Unlock()
	var rc textwait.RowsCache
	src := n.textSource()
	for _, r := range regs {
		r.Eval(src, &rc)
	}
}

// textSource is what a node's text waits read: its mirror and its inputs.
type textSource struct{ n *Node }

func (n *Node) textSource() textwait.Source { return textSource{n} }

func (s textSource) TextStart(rev uint64) (uint64, bool, error) { return s.n.Scr.TextStart(rev) }

func (s textSource) AppendTextRange(dst []byte, off, to uint64, first bool) ([]byte, uint64, uint64) {
	return s.n.Scr.AppendTextRange(dst, off, to, first)
}

func (s textSource) InputsAfter(rev, seq uint64) ([]textwait.Input, uint64) {
	return s.n.inputsAfter(rev, seq)
}

func (s textSource) SeededAfter(rev uint64) bool {
	s.n.Mu.Lock()
	defer s.n.Mu.Unlock()
	return s.n.seedRev > rev
}

func (s textSource) RowsSince(rev uint64) []string {
	ch, err := s.n.Scr.ChangesSince(rev)
	if err != nil {
		return s.n.Scr.Rows()
	}
	rows := make([]string, 0, len(ch.Rows))
	for _, r := range ch.Rows {
		rows = append(rows, r.Text)
	}
	return rows
}
