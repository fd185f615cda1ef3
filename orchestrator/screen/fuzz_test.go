package screen_test

import (
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
)

// FuzzWrite feeds arbitrary bytes split at arbitrary points: Write must never
// panic or block, and the screen always has exactly its number of rows.
func FuzzWrite(f *testing.F) {
	for _, seed := range []string{
		"hello\r\nworld",
		"\x1b[1;50r\x1b[S",
		"\x1b[?1049h\x1b[2J\x1b[H日本\x1b[?1049l",
		"\x1b[c\x1b[6n\x1b]11;?\x07\x1b[?2004$p",
		"abcd日\x1b[1;5H🙂",
		"\x1b[99999999999999999999r\x1b[T\x1b[L",
		"\x1bP$qm\x1b\\\x1b]8;;x\x07y",
		"\xe6\x97",
	} {
		f.Add([]byte(seed), uint8(3), uint8(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut1, cut2 uint8) {
		const cols, rows = 12, 5
		s := screen.New(cols, rows)
		defer s.Close()
		a := min(int(cut1), len(data))
		b := min(a+int(cut2), len(data))
		done := make(chan struct{})
		go func() {
			defer close(done)
			for _, part := range [][]byte{data[:a], data[a:b], data[b:]} {
				_ = s.Write(part) // an ErrNeedReseed is fine; a panic is not
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Write blocked on %q", data)
		}
		snap := s.Snapshot()
		if len(snap.Lines) != rows || len(s.Rows()) != rows {
			t.Fatalf("%d rows", len(snap.Lines))
		}
		// X == cols is tmux's pending-wrap position (the last column was
		// just written); anything past it is a bug.
		if snap.Cursor.X < 0 || snap.Cursor.X > cols || snap.Cursor.Y < 0 || snap.Cursor.Y >= rows {
			t.Fatalf("cursor %+v", snap.Cursor)
		}
		if _, err := s.ChangesSince(0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TextSince(0); err != nil {
			t.Fatal(err)
		}
	})
}
