package screen

import (
	"bytes"
	"io"
	"testing"
)

// sizeReader records the largest buffer it was asked to fill and how
// much it gave.
type sizeReader struct {
	r       io.Reader
	largest int
	read    int
}

func (s *sizeReader) Read(p []byte) (int, error) {
	s.largest = max(s.largest, len(p))
	n, err := s.r.Read(p)
	s.read += n
	return n, err
}

// The drain of the emulator's answers reads everything to the end with a
// small buffer (io.Copy into io.Discard reads with 8 KiB).
func TestDrainReadsAllWithSmallBuffer(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("\x1b[?62;22c"), 1000)
	r := &sizeReader{r: bytes.NewReader(data)}
	drain(r)
	if r.read != len(data) {
		t.Fatalf("drained %d bytes of %d", r.read, len(data))
	}
	if r.largest > drainSize {
		t.Fatalf("drain read with a %d-byte buffer, want at most %d", r.largest, drainSize)
	}
}

// A program's queries are answered into the drain: writing many of them
// never blocks the screen (a blocked drain hangs this test).
func TestQueriesDoNotBlockWrites(t *testing.T) {
	t.Parallel()
	s := New(80, 24)
	defer s.Close()
	for range 200 {
		if err := s.Write(bytes.Repeat([]byte("\x1b[c\x1b[6n\x1b]10;?\x07"), 20)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Write([]byte("end")); err != nil {
		t.Fatal(err)
	}
	if got := s.Snapshot().Lines[0]; got != "end" {
		t.Fatalf("first row %q, want %q", got, "end")
	}
}
