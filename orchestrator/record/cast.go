package record

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Bounds of a replayed screen; a cast asking for more is clamped.
const (
	maxCols = 512
	maxRows = 256
)

// castEvent is one event of a parsed cast. Its data is not decoded: off
// and end delimit the JSON string's content in the cast's bytes (at most
// MaxTraceBytes, so 32 bits). It is 24 bytes: a cast of one-character
// events has one for every 20 bytes of file, and the index is the
// largest thing an open trace holds (BenchmarkTraceMemory).
type castEvent struct {
	us     int64  // microseconds from the start, never decreasing
	off    uint32 // content start (after the opening quote)
	end    uint32 // content end (before the closing quote)
	cols   int16  // 'r': the new size (at most maxCols x maxRows)
	rows   int16
	code   byte // 'o', 'i', 'r', 'm'; 0 for another code
	plain  bool // the content needs no unescaping
	sizeOK bool // 'r': the size parsed
}

// span is the length of the event's data as written in the cast.
func (e *castEvent) span() int { return int(e.end - e.off) }

// castInfo is the header of a cast (the fields termsprawl reads).
type castInfo struct {
	Version   int     `json:"version"`
	Width     int     `json:"width"`
	Height    int     `json:"height"`
	Timestamp float64 `json:"timestamp"`
	Command   string  `json:"command"`
	Title     string  `json:"title"`
}

// parsedCast is a whole cast file, indexed.
type parsedCast struct {
	raw       []byte
	info      castInfo
	events    []castEvent
	output    int64    // the decoded length of the output events' data (about: invalid UTF-8 is not counted as expanded)
	truncated bool     // the cast ends in a line that does not parse
	warnings  []string // what was skipped or repaired
}

// errNotCast is wrapped by parseCast when the header is not asciicast v2.
var errNotCast = errors.New("not an asciicast v2 file")

// parseCast indexes raw, an asciicast v2 file. A line that does not parse
// ends the readable part: the events before it are used and truncated is
// set. Times that go backwards are raised to the previous one.
func parseCast(raw []byte) (*parsedCast, error) {
	if len(raw) > 1<<32-1 {
		return nil, fmt.Errorf("the cast is %d bytes, over the 4 GiB an index can address", len(raw))
	}
	// Sized once to the lines: appending would copy the index as it
	// grows, several times its final size in garbage.
	c := &parsedCast{raw: raw, events: make([]castEvent, 0, bytes.Count(raw, []byte{'\n'})+1)}
	nl := bytes.IndexByte(raw, '\n')
	if nl < 0 {
		nl = len(raw)
	}
	head := bytes.TrimSpace(bytes.TrimPrefix(raw[:nl], []byte("\xef\xbb\xbf")))
	if len(head) == 0 || head[0] != '{' {
		return nil, fmt.Errorf("%w: the first line is not a JSON object", errNotCast)
	}
	if err := json.Unmarshal(head, &c.info); err != nil {
		return nil, fmt.Errorf("%w: header: %v", errNotCast, err)
	}
	if c.info.Version != 2 {
		return nil, fmt.Errorf("%w: header version %d (only version 2 is read)", errNotCast, c.info.Version)
	}
	if c.info.Width < 1 || c.info.Height < 1 {
		return nil, fmt.Errorf("%w: header size %dx%d", errNotCast, c.info.Width, c.info.Height)
	}
	if c.info.Width > maxCols || c.info.Height > maxRows {
		c.warnings = append(c.warnings, fmt.Sprintf("header size %dx%d clamped to %dx%d", c.info.Width, c.info.Height, min(c.info.Width, maxCols), min(c.info.Height, maxRows)))
		c.info.Width, c.info.Height = min(c.info.Width, maxCols), min(c.info.Height, maxRows)
	}
	var prev int64
	backwards := 0
	lineNo := 2 // the header is line 1
	for pos := nl + 1; pos < len(raw); lineNo++ {
		end := bytes.IndexByte(raw[pos:], '\n')
		complete := end >= 0
		if !complete {
			end = len(raw) - pos
		}
		line := raw[pos : pos+end]
		start := pos
		pos += end + 1
		trimmed := bytes.TrimRight(line, " \t\r")
		if len(bytes.TrimSpace(trimmed)) == 0 {
			continue
		}
		ev, dlen, err := parseEventLine(trimmed)
		if err != nil {
			c.truncated = true
			if complete {
				c.warnings = append(c.warnings, fmt.Sprintf("line %d does not parse (%v): the cast is read up to line %d", lineNo, err, lineNo-1))
			} else {
				c.warnings = append(c.warnings, fmt.Sprintf("the last line (%d) is cut short: ignored", lineNo))
			}
			break
		}
		ev.off += uint32(start)
		ev.end += uint32(start)
		if ev.code == 'o' {
			c.output += int64(dlen)
		}
		if ev.us < prev {
			ev.us = prev
			backwards++
		}
		prev = ev.us
		if ev.code == 'r' {
			cols, rows, ok := parseSize(raw[ev.off:ev.end])
			ev.cols, ev.rows, ev.sizeOK = int16(cols), int16(rows), ok
			if !ev.sizeOK {
				c.warnings = append(c.warnings, fmt.Sprintf("line %d: resize %q is not WxH: ignored", lineNo, clipBytes(raw[ev.off:ev.end], 40)))
			}
		}
		c.events = append(c.events, ev)
	}
	if backwards > 0 {
		c.warnings = append(c.warnings, fmt.Sprintf("%d events went back in time: raised to the time before them", backwards))
	}
	return c, nil
}

func clipBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

// parseSize parses "WxH", clamped to the replay bounds.
func parseSize(s []byte) (cols, rows int32, ok bool) {
	i := bytes.IndexByte(s, 'x')
	if i < 0 {
		return 0, 0, false
	}
	w, err1 := strconv.Atoi(string(s[:i]))
	h, err2 := strconv.Atoi(string(s[i+1:]))
	if err1 != nil || err2 != nil || w < 1 || h < 1 {
		return 0, 0, false
	}
	return int32(min(w, maxCols)), int32(min(h, maxRows)), true
}

// data returns the decoded data of event e; buf is scratch space that may
// be used for the result.
func (c *parsedCast) data(e *castEvent, buf []byte) []byte {
	s := c.raw[e.off:e.end]
	if e.plain {
		return s
	}
	return decodeJSONText(buf[:0], s)
}

// parseEventLine parses `[time, "code", "data"]`. The offsets in the
// result are relative to line.
func parseEventLine(line []byte) (castEvent, int, error) {
	var ev castEvent
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '[' {
		return ev, 0, errors.New("not a JSON array")
	}
	i = skipWS(line, i+1)
	j := scanNumber(line, i)
	if j < 0 {
		return ev, 0, errors.New("the time is not a JSON number")
	}
	f, err := strconv.ParseFloat(string(line[i:j]), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return ev, 0, errors.New("the time is not a number")
	}
	switch {
	case math.IsNaN(f) || f < 0:
		f = 0
	case f > 1e12:
		f = 1e12
	}
	ev.us = int64(math.Round(f * 1e6))
	i = skipWS(line, j)
	if i >= len(line) || line[i] != ',' {
		return ev, 0, errors.New("missing ',' after the time")
	}
	i = skipWS(line, i+1)
	cs, ce, plain, _, ok := scanString(line, i)
	if !ok {
		return ev, 0, errors.New("the event code is not a JSON string")
	}
	code := line[cs:ce]
	if !plain {
		code = decodeJSONText(nil, code)
	}
	if len(code) == 1 {
		switch code[0] {
		case 'o', 'i', 'r', 'm':
			ev.code = code[0]
		}
	}
	i = skipWS(line, ce+1)
	if i >= len(line) || line[i] != ',' {
		return ev, 0, errors.New("missing ',' after the event code")
	}
	i = skipWS(line, i+1)
	ds, de, plain, dlen, ok := scanString(line, i)
	if !ok {
		return ev, 0, errors.New("the event data is not a JSON string")
	}
	ev.off, ev.end, ev.plain = uint32(ds), uint32(de), plain
	i = skipWS(line, de+1)
	if i >= len(line) || line[i] != ']' {
		return ev, 0, errors.New("the event is not [time, code, data]")
	}
	if skipWS(line, i+1) != len(line) {
		return ev, 0, errors.New("text after the event")
	}
	return ev, dlen, nil
}

func skipWS(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

// scanNumber returns the end of the JSON number at s[i:], or -1.
func scanNumber(s []byte, i int) int {
	digits := func(i int) int {
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		return j
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(i)
	default:
		return -1
	}
	if i < len(s) && s[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// scanString checks the JSON string at s[i:] and returns its content span
// (start after the opening quote, end at the closing quote), whether the
// content is already its own value (no escapes, valid UTF-8), and the
// length of its value.
func scanString(s []byte, i int) (start, end int, plain bool, dlen int, ok bool) {
	if i >= len(s) || s[i] != '"' {
		return 0, 0, false, 0, false
	}
	start = i + 1
	escapes := false
	ascii := true
	shrink := 0 // bytes the escapes take beyond their value
	for j := start; j < len(s); j++ {
		for j+8 <= len(s) && swarSafe(binary.LittleEndian.Uint64(s[j:])) {
			j += 8
		}
		if j >= len(s) {
			break
		}
		c := s[j]
		switch {
		case c == '"':
			plain = !escapes && (ascii || utf8.Valid(s[start:j]))
			return start, j, plain, j - start - shrink, true
		case c == '\\':
			escapes = true
			j++
			if j >= len(s) {
				return 0, 0, false, 0, false
			}
			switch s[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				shrink++
			case 'u':
				if j+4 >= len(s) {
					return 0, 0, false, 0, false
				}
				r := rune(0)
				for _, h := range s[j+1 : j+5] {
					v := hexVal(h)
					if v < 0 {
						return 0, 0, false, 0, false
					}
					r = r<<4 | v
				}
				n := utf8.RuneLen(r)
				if n < 0 {
					n = 3 // a surrogate half: U+FFFD alone, half of 4 bytes in a pair
				}
				shrink += 6 - n
				j += 4
			default:
				return 0, 0, false, 0, false
			}
		case c < 0x20:
			return 0, 0, false, 0, false
		case c >= 0x80:
			ascii = false
		}
	}
	return 0, 0, false, 0, false
}

func hexVal(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c - 'a' + 10)
	case c >= 'A' && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// getu4 decodes `\uXXXX` at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		h := hexVal(c)
		if h < 0 {
			return -1
		}
		r = r<<4 | h
	}
	return r
}

// decodeJSONText appends the value of the JSON string content s (checked
// by scanString) to dst, as encoding/json decodes it: invalid UTF-8 bytes
// and unpaired surrogates become U+FFFD.
func decodeJSONText(dst, s []byte) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c == '\\' {
			dst = append(dst, s[start:i]...)
			if i+1 >= len(s) {
				return dst
			}
			switch s[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := getu4(s[i:])
				if r < 0 {
					return dst
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2 := getu4(s[i:]); r2 >= 0 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							dst = utf8.AppendRune(dst, d)
							i += 6
							start = i
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				start = i
				continue
			default: // '"', '\\', '/'
				dst = append(dst, s[i+1])
			}
			i += 2
			start = i
			continue
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}
