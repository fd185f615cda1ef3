package screen

import (
	"errors"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
)

func TestScrollbackDisabled(t *testing.T) {
	emu := vt.NewEmulator(10, 3)
	if !disableScrollback(emu) {
		t.Fatal("x/vt layout changed: scrollback could not be removed (alternate screen scrollback will grow)")
	}
	scrs := reflect.ValueOf(emu).Elem().FieldByName("scrs")
	for i := range scrs.Len() {
		if !scrs.Index(i).FieldByName("scrollback").IsNil() {
			t.Fatalf("screen %d keeps a scrollback", i)
		}
	}
	// Every path that pushes to scrollback copes with nil.
	_, _ = emu.Write([]byte("a\r\nb\r\nc\r\nd\x1b[2J\x1b[3J\x1b[S\x1b[?1049he\r\nf\r\ng\r\nh\x1b[2J\x1b[3J\x1b[S\x1b[?1049l\x1bc"))
	if emu.ScrollbackLen() != 0 {
		t.Fatalf("scrollback has %d lines", emu.ScrollbackLen())
	}
}

func TestPanicPoisonsUntilSeed(t *testing.T) {
	s := New(10, 3)
	defer s.Close()
	_ = s.Write([]byte("before"))
	s.mu.Lock()
	err := s.run("write", func() { panic("boom") })
	s.mu.Unlock()
	var pe *PanicError
	if !errors.Is(err, ErrNeedReseed) || !errors.As(err, &pe) || pe.Value != "boom" {
		t.Fatalf("run: %v", err)
	}
	rev := s.Revision()
	if err := s.Write([]byte("\r\nlost")); !errors.Is(err, ErrNeedReseed) {
		t.Fatalf("Write on a poisoned emulator: %v", err)
	}
	// The screen model is frozen but the text still counts.
	if s.Rows()[0] != "before" || s.Revision() != rev+1 {
		t.Fatalf("rows %q rev %d", s.Rows(), s.Revision())
	}
	if txt, _ := s.TextSince(rev); txt != "\nlost" {
		t.Fatalf("text %q", txt)
	}
	if err := s.Seed(SeedState{Columns: 10, Rows: 3, CursorVisible: true, Lines: []string{"seeded"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write([]byte("\r\nok")); err != nil {
		t.Fatal(err)
	}
	if got := s.Rows(); got[0] != "seeded" || got[1] != "ok" {
		t.Fatalf("after reseed %q", got)
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 50 {
		s := New(20, 5)
		_ = s.Write([]byte("x\x1b[c\x1b[6n"))
		_ = s.Seed(SeedState{Columns: 20, Rows: 5})
		s.mu.Lock()
		_ = s.run("write", func() { panic("x") })
		s.mu.Unlock()
		_ = s.Seed(SeedState{Columns: 20, Rows: 5}) // replaces the emulator
		_ = s.Close()
		_ = s.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("goroutines: %d before, %d after", before, n)
	}
}
