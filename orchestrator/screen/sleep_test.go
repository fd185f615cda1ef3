package screen

import (
	"errors"
	"testing"
)

func TestSleepKeepsStateAndSeedWakes(t *testing.T) {
	t.Parallel()
	s := New(20, 3)
	defer s.Close()
	if err := s.Write([]byte("hello\r\nworld")); err != nil {
		t.Fatal(err)
	}
	before := s.Snapshot()
	s.Sleep()
	if !s.Asleep() {
		t.Fatal("not asleep after Sleep")
	}
	if got := s.Snapshot(); got.Revision != before.Revision || got.Lines[1] != "world" {
		t.Fatalf("sleeping changed the published state: %+v", got)
	}
	if err := s.Write([]byte("more")); !errors.Is(err, ErrNeedReseed) {
		t.Fatalf("Write while asleep = %v, want ErrNeedReseed", err)
	}
	if txt, err := s.TextSince(before.Revision); err != nil || txt != "more" {
		t.Fatalf("text written while asleep = %q, %v", txt, err)
	}
	if err := s.Seed(SeedState{Columns: 20, Rows: 3, CursorX: 3, CursorY: 2, CursorVisible: true, Lines: []string{"a", "b", "c:)"}}); err != nil {
		t.Fatal(err)
	}
	if s.Asleep() {
		t.Fatal("still asleep after Seed")
	}
	if err := s.Write([]byte("!")); err != nil {
		t.Fatal(err)
	}
	if got := s.Rows(); got[2] != "c:)!" {
		t.Fatalf("rows after waking = %q", got)
	}
}
