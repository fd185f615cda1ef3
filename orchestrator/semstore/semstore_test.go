package semstore

import "testing"

// A commit stamped with the same screen revision as an input counts as
// after the input only when it came after it (the input's mark).
func TestSemanticBaselineAtAnInput(t *testing.T) {
	t.Parallel()
	var s Store
	if s.BaselineAt(5) != 0 {
		t.Fatal("no commits: baseline 0")
	}
	c0 := s.Add(Commit{Rev: 0}) // stamped before any output was mirrored
	if got := s.BaselineAt(0); got != 0 {
		t.Fatalf("after 0 is the node's start: baseline %d, want 0 (commit %d counts)", got, c0.Seq)
	}
	c1 := s.Add(Commit{Rev: 10})
	s.MarkInput(10)
	c2 := s.Add(Commit{Rev: 10}) // the program's answer, before its output reached the mirror
	s.MarkInput(10)              // a later input at the same revision (even one refused)
	if got := s.BaselineAt(10); got != c1.Seq {
		t.Fatalf("baseline %d, want %d (c2 %d must count as after the input)", got, c1.Seq, c2.Seq)
	}
	if got := s.BaselineAt(11); got != c2.Seq {
		t.Fatalf("baseline at a later revision %d, want %d", got, c2.Seq)
	}
	for range MaxCommits + 5 {
		s.Add(Commit{Rev: 20})
	}
	if cs, _ := s.After(0); len(cs) != MaxCommits {
		t.Fatalf("kept %d commits", len(cs))
	}
	if got := s.BaselineAt(15); got != s.commits[0].Seq-1 {
		t.Fatalf("a baseline older than the kept commits: %d", got)
	}
	// Big trees: at most MaxBytes kept, but always the latest.
	for range 20 {
		s.Add(Commit{Rev: 30, Size: 1 << 20})
	}
	if len(s.commits) != 8 || s.bytes != 8<<20 {
		t.Fatalf("%d commits of %d bytes kept", len(s.commits), s.bytes)
	}
	s.Add(Commit{Rev: 31, Size: 9 << 20})
	if len(s.commits) != 1 || s.bytes != 9<<20 {
		t.Fatalf("a tree over the budget: %d commits of %d bytes kept", len(s.commits), s.bytes)
	}
}
