package record

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"
)

// jsonSafe marks the ASCII bytes that stand for themselves inside a JSON
// string.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// swarSafe reports whether the 8 bytes of w are all printable ASCII other
// than '"' and '\\' (bytes 0x20..0x7f).
func swarSafe(w uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	ctl := (w - lo*0x20) & ^w & hi // a byte < 0x20
	q := w ^ (lo * '"')
	q = (q - lo) & ^q & hi // a '"'
	bs := w ^ (lo * '\\')
	bs = (bs - lo) & ^bs & hi // a '\\'
	return (w&hi)|ctl|q|bs == 0
}

// jsonEscape is the escape of each ASCII byte that needs one.
var jsonEscape = func() (t [utf8.RuneSelf]string) {
	for c := range 0x20 {
		t[c] = `\u00` + string(hexDigits[c>>4]) + string(hexDigits[c&0xf])
	}
	t['\n'], t['\r'], t['\t'], t['\b'], t['\f'] = `\n`, `\r`, `\t`, `\b`, `\f`
	t['"'], t['\\'] = `\"`, `\\`
	return t
}()

// appendJSONText appends s as the inside of a JSON string (no quotes).
// s must not end in an incomplete UTF-8 sequence (the caller holds such a
// tail back); invalid bytes become U+FFFD, so the result is always valid
// UTF-8 and valid JSON. Runs of plain bytes are found eight at a time and
// copied at once.
func appendJSONText(dst, s []byte) []byte {
	start, i := 0, 0
	for i < len(s) {
		for i+8 <= len(s) && swarSafe(binary.LittleEndian.Uint64(s[i:])) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, jsonEscape[c]...)
			i++
			start = i
			continue
		}
		dst, i, start = stepRune(dst, s, start, i)
	}
	return append(dst, s[start:]...)
}

// appendSeconds appends us microseconds as seconds with six decimals.
func appendSeconds(dst []byte, us int64) []byte {
	if us < 0 {
		us = 0
	}
	dst = strconv.AppendInt(dst, us/1e6, 10)
	frac := us % 1e6
	dst = append(dst, '.')
	for d := int64(1e5); d > 0; d /= 10 {
		dst = append(dst, byte('0'+frac/d%10))
	}
	return dst
}

// appendEventHead appends `[seconds, "code", "` of a cast event.
func appendEventHead(dst []byte, us int64, code byte) []byte {
	dst = append(dst, '[')
	dst = appendSeconds(dst, us)
	return append(dst, ',', ' ', '"', code, '"', ',', ' ', '"')
}

// appendEventTail closes a cast event.
func appendEventTail(dst []byte) []byte { return append(dst, '"', ']', '\n') }

// incompleteTail returns the start of an incomplete UTF-8 sequence at the
// end of p (one that more bytes could complete), or len(p).
func incompleteTail(p []byte) int {
	for k := len(p) - 1; k >= 0 && k >= len(p)-3; k-- {
		c := p[k]
		if c < 0x80 {
			return len(p)
		}
		if c >= 0xC0 { // a lead byte
			if !utf8.FullRune(p[k:]) {
				return k
			}
			return len(p)
		}
	}
	return len(p)
}

// holdCut returns where to cut p: the bytes from the cut on are held back
// until the next output. They are an incomplete UTF-8 sequence at the end
// and, before it, a last printable character: the next output may extend
// its grapheme cluster (a combining mark, a zero-width joiner), and the
// emulator only joins a cluster that arrives in one write.
func holdCut(p []byte) int {
	cut := incompleteTail(p)
	if cut == 0 {
		return 0
	}
	r, size := utf8.DecodeLastRune(p[:cut])
	if (r == utf8.RuneError && size <= 1) || r < 0x20 || r == 0x7f {
		return cut
	}
	return cut - size
}

// stepRune steps over the non-ASCII UTF-8 sequence at s[i] of a run of s
// being copied to dst from start: a valid one stays in the run, an invalid
// byte ends the run and is written as U+FFFD. It returns dst, the next
// index and the run's start. The one UTF-8 sanitizer of the cast writer
// (appendJSONText) and reader (decodeJSONText).
func stepRune(dst, s []byte, start, i int) ([]byte, int, int) {
	r, size := utf8.DecodeRune(s[i:])
	if r == utf8.RuneError && size == 1 {
		dst = append(dst, s[start:i]...)
		return append(dst, "\uFFFD"...), i + 1, i + 1
	}
	return dst, i + size, start
}
