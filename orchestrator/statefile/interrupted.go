package statefile

import (
	"os"
	"sync"
)

// Outcomes of an interrupted call, as adoption settled it.
const (
	OutcomeCleared     = "cleared"      // submit: its line was cleared, nothing was submitted
	OutcomeMaybe       = "maybe"        // submit: killed while pressing Enter: it may have been submitted
	OutcomeSubmitted   = "submitted"    // submit: Enter was sent
	OutcomeClosed      = "closed"       // close: finished on adoption
	OutcomeCloseFailed = "close_failed" // close: could not be finished; the node is kept
)

// Interrupted is one call a killed orchestrator left unfinished (its
// mark) and what adoption did with it.
type Interrupted struct {
	Node    string
	Op      string // "terminal_submit" or "terminal_close"
	Intent  Intent
	Outcome string
	Err     error // OutcomeCloseFailed: why
}

// Settled keeps adoption's list of interrupted calls until the tool
// server acks it.
type Settled struct {
	mu   sync.Mutex // guards list
	list []Interrupted
}

// Add puts a settled call on the list.
func (s *Settled) Add(in Interrupted) {
	s.mu.Lock()
	s.list = append(s.list, in)
	s.mu.Unlock()
}

// List is a copy of the list.
func (s *Settled) List() []Interrupted {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Interrupted(nil), s.list...)
}

// Ack drops the submit marks of the calls in list (their outcome is
// recorded elsewhere now) and empties the list.
func (s *Settled) Ack(stateDir string, list []Interrupted) {
	for _, in := range list {
		if in.Op == "terminal_submit" {
			os.Remove(Path(stateDir, in.Node, Input))
		}
	}
	s.mu.Lock()
	s.list = nil
	s.mu.Unlock()
}
