package tmuxctl

import (
	"bufio"
	"bytes"
	"io"
)

// The reader's buffer: it starts at lineReadMin, grows to lineReadMax as
// soon as a read fills it (a flood reads lineReadMax at a time, as a fixed
// bufio.Reader of that size did) or doubles for a line that does not fit,
// and goes back to lineReadMin once lineShrinkAfter reads in a row found
// little (a quiet or slowly printing pane). A quiet client then holds
// 4 KiB instead of 64 (docs/PERFORMANCE.md "Memory per node").
const (
	lineReadMin     = 4 << 10
	lineReadMax     = 64 << 10
	lineShrinkAfter = 64
)

// lineReader reads tmux's stdout a line at a time, like
// bufio.Reader.ReadSlice('\n'), with a buffer sized to the traffic. It is
// used by the one goroutine that reads the stream (readLoop).
type lineReader struct {
	r          io.Reader
	buf        []byte
	start, end int   // buf[start:end] is read and not yet returned
	scanned    int   // bytes after start known to hold no '\n'
	err        error // the reader's error, returned once the buffer is empty
	small      int   // reads in a row that returned less than lineReadMin
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: r, buf: make([]byte, lineReadMin)}
}

// buffered is how many bytes were read and not yet returned.
func (l *lineReader) buffered() int { return l.end - l.start }

// readSlice returns the next line with its '\n'. The slice is valid until
// the next call. A line that does not fit in lineReadMax comes in pieces
// with bufio.ErrBufferFull; at the end of the stream the rest comes with
// the reader's error.
func (l *lineReader) readSlice() ([]byte, error) {
	empty := 0
	for {
		if i := bytes.IndexByte(l.buf[l.start+l.scanned:l.end], '\n'); i >= 0 {
			line := l.buf[l.start : l.start+l.scanned+i+1]
			l.start += l.scanned + i + 1
			l.scanned = 0
			return line, nil
		}
		l.scanned = l.end - l.start
		if l.err != nil {
			line := l.buf[l.start:l.end]
			l.start, l.scanned = l.end, 0
			return line, l.err
		}
		if l.start == l.end {
			l.start, l.end = 0, 0
			if l.small >= lineShrinkAfter && len(l.buf) > lineReadMin {
				l.buf = make([]byte, lineReadMin)
			}
		}
		if l.start > 0 {
			l.end = copy(l.buf, l.buf[l.start:l.end])
			l.start = 0
		}
		if l.end == len(l.buf) {
			if len(l.buf) >= lineReadMax {
				l.start, l.scanned = l.end, 0
				return l.buf[:l.end], bufio.ErrBufferFull
			}
			l.grow(2 * len(l.buf))
		}
		room := len(l.buf) - l.end
		n, err := l.r.Read(l.buf[l.end:])
		l.end += n
		l.err = err
		switch {
		case n >= lineReadMin:
			l.small = 0
		default:
			l.small++
		}
		if n == room && len(l.buf) < lineReadMax {
			l.grow(lineReadMax) // the read filled the buffer: more is waiting
		}
		if n == 0 && err == nil {
			if empty++; empty >= 100 {
				l.err = io.ErrNoProgress
			}
		}
	}
}

// grow makes the buffer size bytes, at most lineReadMax, keeping what it
// holds.
func (l *lineReader) grow(size int) {
	nb := make([]byte, min(size, lineReadMax))
	l.end = copy(nb, l.buf[l.start:l.end])
	l.start = 0
	l.buf = nb
}
