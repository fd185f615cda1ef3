package tools

import (
	"strings"
	"unicode/utf8"
)

// Text from outside — a node's name or argv, a title, a dialog's tool
// input, a branch or file name, diff content, a log line, hook evidence,
// a notification — never reaches a human's terminal raw (CONTRACT §26).
// Every human surface (CLI tables and lines, the picker, the dashboard,
// tmux status messages, notifications) shows it through VisibleLine or
// VisibleText. --json output keeps the exact strings; encoding/json
// escapes them.
//
// The one convention:
//   - C0 controls and DEL in caret notation: ESC is ^[, BEL ^G, DEL ^?;
//   - C1 controls (U+0080–U+009F) as the ESC sequence they stand for:
//     CSI (U+009B) is ^[[ , OSC (U+009D) is ^[];
//   - bytes that are not UTF-8 as \xNN;
//   - the Unicode format characters that reorder or hide text (bidi
//     overrides and isolates, zero-width joiners, the BOM) as \u{XXXX}.
//
// A caret shown this way can be told from a typed caret only by context;
// that is accepted: what matters is that the terminal receives no
// control, so nothing the outside wrote can move the cursor, erase a
// row, set the clipboard or retitle the window.

// VisibleLine renders outside text for one line of a human surface:
// every control is made visible, newlines and tabs included.
func VisibleLine(s string) string { return visible(s, false) }

// VisibleText renders outside text that may span lines (a diff, a log
// excerpt, a screen): newlines and tabs are kept, every other control is
// made visible. A carriage return is made visible too (^M), since it
// would let a line overwrite its own start.
func VisibleText(s string) string { return visible(s, true) }

// NeedsVisible reports whether VisibleLine would change s.
func NeedsVisible(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || hiddenRune(r) {
			return true
		}
		i += size
	}
	return false
}

func hiddenRune(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	}
	return formatRune(r)
}

// formatRune: the invisible characters that change how the text around
// them is ordered or joined (Trojan Source).
func formatRune(r rune) bool {
	switch {
	case r >= 0x200b && r <= 0x200f, // zero-width space/joiners, LRM, RLM
		r >= 0x202a && r <= 0x202e, // bidi embeddings and overrides
		r >= 0x2066 && r <= 0x2069, // bidi isolates
		r == 0x2028, r == 0x2029,   // line and paragraph separators
		r == 0x061c, // Arabic letter mark
		r == 0xfeff: // BOM / zero-width no-break space
		return true
	}
	return false
}

func visible(s string, keepLines bool) string {
	if !NeedsVisible(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			const hex = "0123456789abcdef"
			c := s[i]
			b.WriteString(`\x`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(r) + 0x40)
		case r == 0x7f:
			b.WriteString("^?")
		case r >= 0x80 && r <= 0x9f:
			b.WriteString("^[")
			b.WriteByte(byte(r - 0x40))
		case formatRune(r):
			b.WriteString(`\u{`)
			b.WriteString(strings.ToUpper(strings.TrimLeft(hex4(r), "0")))
			b.WriteString(`}`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func hex4(r rune) string {
	const hex = "0123456789abcdef"
	return string([]byte{hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf]})
}
