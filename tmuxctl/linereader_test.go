package tmuxctl

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// chunkReader returns data in pieces of random sizes up to the caller's
// buffer, as a pipe does.
type chunkReader struct {
	data []byte
	rng  *rand.Rand
	most int // largest piece; 0: the caller's buffer
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data))
	if c.most > 0 {
		n = min(n, c.most)
	}
	n = 1 + c.rng.IntN(n)
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// readAllLines collects what a reader returns, a line longer than the
// buffer joined from its pieces; no piece is longer than lineReadMax.
func readAllLines(t *testing.T, next func() ([]byte, error)) []string {
	t.Helper()
	var out []string
	var long []byte
	for {
		piece, err := next()
		if len(piece) > lineReadMax {
			t.Fatalf("a piece of %d bytes", len(piece))
		}
		long = append(long, piece...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(long) > 0 {
			out = append(out, string(long))
		}
		long = nil
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// The reader returns the same lines as bufio.Reader.ReadSlice with a
// buffer of lineReadMax: short lines, lines longer than the buffer (in
// pieces), a last line without '\n', whatever the pipe's pieces.
func TestLineReaderMatchesBufio(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(27, 2))
	var data []byte
	for range 1000 {
		switch rng.IntN(10) {
		case 0:
			data = append(data, bytes.Repeat([]byte{'L'}, lineReadMax+rng.IntN(3*lineReadMax))...)
		case 1, 2:
			data = append(data, bytes.Repeat([]byte{'m'}, rng.IntN(3*lineReadMin))...)
		default:
			data = append(data, bytes.Repeat([]byte{'s'}, rng.IntN(80))...)
		}
		data = append(data, '\n')
	}
	data = append(data, "no newline"...)
	for _, most := range []int{0, 100, 5000} {
		br := bufio.NewReaderSize(&chunkReader{data: data, rng: rand.New(rand.NewPCG(1, uint64(most))), most: most}, lineReadMax)
		want := readAllLines(t, func() ([]byte, error) { return br.ReadSlice('\n') })
		lr := newLineReader(&chunkReader{data: data, rng: rand.New(rand.NewPCG(2, uint64(most))), most: most})
		got := readAllLines(t, lr.readSlice)
		if len(got) != len(want) {
			t.Fatalf("pieces of %d: %d lines, bufio %d", most, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("pieces of %d: line %d is %d bytes, bufio's %d", most, i, len(got[i]), len(want[i]))
			}
		}
		if lr.buffered() != 0 {
			t.Fatalf("%d bytes left buffered at the end", lr.buffered())
		}
	}
}

// A flood grows the buffer to lineReadMax; lines that trickle in after it
// take it back to lineReadMin, and a flood grows it again.
func TestLineReaderGrowsAndShrinks(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	defer pr.Close()
	lr := newLineReader(pr)
	if len(lr.buf) != lineReadMin {
		t.Fatalf("starts with %d bytes, want %d", len(lr.buf), lineReadMin)
	}
	flood := bytes.Repeat([]byte("%output %1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"), 4096)
	lines := func(n int) {
		t.Helper()
		for range n {
			if _, err := lr.readSlice(); err != nil {
				t.Fatal(err)
			}
		}
	}
	floodLines := bytes.Count(flood, []byte("\n"))
	go func() {
		// io.Pipe hands each write to reads whole, up to their buffer: the
		// flood fills every read, the trickle is one short line a read.
		pw.Write(flood)
		for range 2 * lineShrinkAfter {
			pw.Write([]byte("%output %1 a line\n"))
		}
		pw.Write(flood)
		pw.Close()
	}()
	lines(floodLines)
	if len(lr.buf) != lineReadMax {
		t.Fatalf("after a flood the buffer is %d bytes, want %d", len(lr.buf), lineReadMax)
	}
	lines(2 * lineShrinkAfter)
	if len(lr.buf) != lineReadMin {
		t.Fatalf("after %d short reads the buffer is %d bytes, want %d", 2*lineShrinkAfter, len(lr.buf), lineReadMin)
	}
	lines(floodLines)
	if len(lr.buf) != lineReadMax {
		t.Fatalf("after a second flood the buffer is %d bytes, want %d", len(lr.buf), lineReadMax)
	}
}
