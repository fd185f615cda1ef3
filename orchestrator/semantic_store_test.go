package orchestrator

import "testing"

// A commit stamped with the same screen revision as an input counts as
// after the input only when it came after it (the input's mark).
func TestSemanticBaselineAtAnInput(t *testing.T) {
	t.Parallel()
	var s semStore
	if s.baselineAt(5) != 0 {
		t.Fatal("no commits: baseline 0")
	}
	c0 := s.add(semCommit{rev: 0}) // stamped before any output was mirrored
	if got := s.baselineAt(0); got != 0 {
		t.Fatalf("after 0 is the node's start: baseline %d, want 0 (commit %d counts)", got, c0.seq)
	}
	c1 := s.add(semCommit{rev: 10})
	s.markInput(10)
	c2 := s.add(semCommit{rev: 10}) // the program's answer, before its output reached the mirror
	s.markInput(10)                 // a later input at the same revision (even one refused)
	if got := s.baselineAt(10); got != c1.seq {
		t.Fatalf("baseline %d, want %d (c2 %d must count as after the input)", got, c1.seq, c2.seq)
	}
	if got := s.baselineAt(11); got != c2.seq {
		t.Fatalf("baseline at a later revision %d, want %d", got, c2.seq)
	}
	for range maxSemCommits + 5 {
		s.add(semCommit{rev: 20})
	}
	if cs, _ := s.after(0); len(cs) != maxSemCommits {
		t.Fatalf("kept %d commits", len(cs))
	}
	if got := s.baselineAt(15); got != s.commits[0].seq-1 {
		t.Fatalf("a baseline older than the kept commits: %d", got)
	}
	// Big trees: at most maxSemBytes kept, but always the latest.
	for range 20 {
		s.add(semCommit{rev: 30, size: 1 << 20})
	}
	if len(s.commits) != 8 || s.bytes != 8<<20 {
		t.Fatalf("%d commits of %d bytes kept", len(s.commits), s.bytes)
	}
	s.add(semCommit{rev: 31, size: 9 << 20})
	if len(s.commits) != 1 || s.bytes != 9<<20 {
		t.Fatalf("a tree over the budget: %d commits of %d bytes kept", len(s.commits), s.bytes)
	}
}
