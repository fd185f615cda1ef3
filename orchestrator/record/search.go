package record

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/charmbracelet/x/ansi"
)

// Searching a recording's text (fleet_search, CONTRACT §30): a cast is
// read one event line at a time, never whole, and its output is cut
// into lines, escape sequences stripped, each with the time its first
// byte was recorded.

// MaxScanEvent bounds one event line of a cast read by ScanText; a longer
// one is skipped (and counted).
const MaxScanEvent = 4 << 20

// MaxScanLine bounds one line of text (raw bytes, before its escape
// sequences are stripped); the rest of a longer line is dropped.
const MaxScanLine = 64 << 10

// TextLine is one line of a recording's output.
type TextLine struct {
	// N is the line's number in the recording's text (1 is the first).
	N int
	// US is when the line's first byte was recorded, in microseconds
	// from the recording's start.
	US   int64
	Text string
}

// ScanStats says what ScanText could not read.
type ScanStats struct {
	// Skipped counts event lines that were too long or did not parse.
	Skipped int
}

// ScanText reads an asciicast v2 cast from r and calls fn with each line
// of its output text, in order, until fn returns false. Memory stays
// within MaxScanEvent plus MaxScanLine whatever the cast's size.
func ScanText(r io.Reader, fn func(TextLine) bool) (ScanStats, error) {
	var st ScanStats
	br := bufio.NewReaderSize(r, 64<<10)
	head, tooLong, err := readLine(br, MaxScanEvent)
	if err != nil && !(errors.Is(err, io.EOF) && len(head) > 0) {
		return st, fmt.Errorf("%w: no header line", errNotCast)
	}
	head = bytes.TrimSpace(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")))
	if tooLong || len(head) == 0 || head[0] != '{' {
		return st, fmt.Errorf("%w: the first line is not a JSON object", errNotCast)
	}
	var (
		line    []byte // the raw bytes of the line being built
		lineUS  int64
		started bool
		n       int
		buf     []byte
	)
	emit := func() bool {
		n++
		text := line
		if i := bytes.LastIndexByte(bytes.TrimRight(text, "\r"), '\r'); i >= 0 {
			text = text[i+1:] // a carriage return wrote over what came before
		}
		t := TextLine{N: n, US: lineUS, Text: dropControls(ansi.Strip(string(bytes.TrimRight(text, "\r"))))}
		line, started = line[:0], false
		return fn(t)
	}
	for {
		raw, long, err := readLine(br, MaxScanEvent)
		if long {
			st.Skipped++
		} else if len(bytes.TrimSpace(raw)) > 0 {
			ev, perr := parseEventLine(bytes.TrimRight(raw, " \t\r"))
			switch {
			case perr != nil:
				st.Skipped++
			case ev.code == 'o':
				data := raw[ev.off:ev.end]
				if !ev.plain {
					buf = decodeJSONText(buf[:0], data)
					data = buf
				}
				for len(data) > 0 {
					if !started {
						lineUS, started = ev.us, true
					}
					i := bytes.IndexByte(data, '\n')
					part := data
					if i >= 0 {
						part = data[:i]
					}
					if room := MaxScanLine - len(line); room > 0 {
						line = append(line, part[:min(len(part), room)]...)
					}
					if i < 0 {
						break
					}
					data = data[i+1:]
					if !emit() {
						return st, nil
					}
				}
			}
		}
		if err != nil {
			if started && len(line) > 0 {
				emit()
			}
			if errors.Is(err, io.EOF) {
				return st, nil
			}
			return st, err
		}
	}
}

// readLine reads one line (without its newline) of at most max bytes; a
// longer one is read to its end, dropped, and reported as tooLong.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var out []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(out)+len(frag) > max {
			tooLong = true
		}
		if !tooLong {
			out = append(out, frag...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			out = nil
		}
		return bytes.TrimSuffix(out, []byte("\n")), tooLong, err
	}
}

// dropControls removes the C0 controls (but tab) and DEL that ansi.Strip
// leaves in text (a keyframe's CAN, a bell, a backspace).
func dropControls(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c >= 0x20 || c == '\t') && c != 0x7f {
			b = append(b, c)
		}
	}
	return string(b)
}
