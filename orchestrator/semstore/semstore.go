// Package semstore keeps one node's semantic tree commits (CONTRACT §22):
// the latest and a bounded history, the commit counter, the marks of the
// inputs sent, and the channel the next commit closes (semantic waits).
// The trees themselves are the pure room orchestrator/semantic.
package semstore

import (
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/semantic"
)

// MaxCommits is how many commits a node keeps (capture_since, refs,
// waits), and MaxBytes how many bytes of trees (as published) at most:
// older commits go first, the latest always stays.
const (
	MaxCommits = 64
	MaxBytes   = 8 << 20
)

// Commit is one published tree, stamped with the screen revision.
type Commit struct {
	Seq  uint64 // 1 for the node's first commit
	Rev  uint64 // the screen revision at the commit
	Size int    // bytes of the tree as published
	Root *semantic.Node
	At   time.Time
}

// Store holds a node's commits.
type Store struct {
	mu      sync.Mutex
	seq     uint64
	commits []Commit      // oldest first, at most MaxCommits
	bytes   int           // their sizes' sum, at most MaxBytes (but the latest)
	changed chan struct{} // closed (and replaced) at each commit
	// marks are the latest commit's seq when an input was sent at a
	// screen revision: a commit stamped with that same revision may come
	// before or after the input, and only the mark tells.
	marks []mark
}

// mark is the commit counter when an input was sent at rev.
type mark struct{ rev, seq uint64 }

// MarkInput notes that an input is being sent at screen revision rev.
func (s *Store) MarkInput(rev uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.marks = append(s.marks, mark{rev: rev, seq: s.seq})
	if extra := len(s.marks) - MaxCommits; extra > 0 {
		s.marks = append([]mark(nil), s.marks[extra:]...)
	}
}

// BaselineAt is the seq a wait or capture with baseline revision rev
// starts after: the commits the first input sent at rev had seen, else
// the newest commit stamped at or before rev; revision 0 is the node's
// start, before every commit.
func (s *Store) BaselineAt(rev uint64) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The first input at rev: what came after it is after rev (a later
	// input at the same revision, even one refused, must not hide it).
	for _, m := range s.marks {
		if m.rev == rev {
			return m.seq
		}
	}
	if rev == 0 {
		return 0 // after: 0 — every commit counts, even one stamped before any output was mirrored
	}
	for i := len(s.commits) - 1; i >= 0; i-- {
		if s.commits[i].Rev <= rev {
			return s.commits[i].Seq
		}
	}
	if len(s.commits) > 0 && s.commits[0].Seq > 1 {
		return s.commits[0].Seq - 1 // older than the kept commits: the oldest kept counts as after
	}
	return 0
}

// Latest returns the newest commit, or false when there is none.
func (s *Store) Latest() (Commit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.commits) == 0 {
		return Commit{}, false
	}
	return s.commits[len(s.commits)-1], true
}

// After returns the commits newer than seq and the channel closed by the
// next commit.
func (s *Store) After(seq uint64) ([]Commit, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	var out []Commit
	for _, c := range s.commits {
		if c.Seq > seq {
			out = append(out, c)
		}
	}
	return out, s.changed
}

// BySeq is the kept commit with seq.
func (s *Store) BySeq(seq uint64) (Commit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.commits {
		if c.Seq == seq {
			return c, true
		}
	}
	return Commit{}, false
}

// Add commits c (its Seq is given here) and drops the oldest commits
// past the bounds; the latest always stays.
func (s *Store) Add(c Commit) Commit {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	c.Seq = s.seq
	s.commits = append(s.commits, c)
	s.bytes += c.Size
	extra := max(len(s.commits)-MaxCommits, 0)
	for b := s.bytes; extra < len(s.commits)-1 && b > MaxBytes; extra++ {
		b -= s.commits[extra].Size
	}
	if extra > 0 {
		for _, d := range s.commits[:extra] {
			s.bytes -= d.Size
		}
		s.commits = append([]Commit(nil), s.commits[extra:]...)
	}
	if s.changed != nil {
		close(s.changed)
	}
	s.changed = make(chan struct{})
	return c
}
