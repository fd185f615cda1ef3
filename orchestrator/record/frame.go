package record

import (
	"strconv"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

// frameBytes renders s as output that paints it over whatever the
// terminal shows: the alternate screen as s says, pen reset, origin mode
// off, full scroll region, the screen cleared, each row drawn at its start
// with autowrap off, then the cursor, the modes s reports and the title.
// Other terminal state (character sets, saved cursor, tab stops) is left
// as the stream had it. No full reset (RIS) is used, so a player keeps its
// own settings.
func frameBytes(s tools.Screen) []byte {
	cols, rows := max(s.Columns, 1), max(s.Rows, 1)
	var b []byte
	b = append(b, 0x18) // CAN: abort a sequence left half-written
	if s.Modes.AltScreen {
		b = append(b, "\x1b[?1049h"...)
	} else {
		b = append(b, "\x1b[?1049l"...)
	}
	b = append(b, "\x1b[0m\x1b[?6l\x1b[r\x1b[H\x1b[2J\x1b[?7l"...)
	for i, line := range s.Lines {
		if i >= rows {
			break
		}
		if strings.TrimRight(line, " ") == "" {
			continue
		}
		b = appendCUP(b, 0, i)
		b = append(b, sanitizeLine(line)...)
	}
	b = append(b, "\x1b[?7h"...)
	b = appendCUP(b, min(max(s.Cursor.X, 0), cols-1), min(max(s.Cursor.Y, 0), rows-1))
	b = appendMode(b, 1, s.Modes.AppCursor)
	b = appendMode(b, 2004, s.Modes.BracketedPaste)
	b = appendMode(b, 1000, s.Modes.Mouse)
	b = appendMode(b, 25, s.Cursor.Visible)
	b = append(b, "\x1b]2;"...)
	b = append(b, sanitizeLine(s.Title)...)
	b = append(b, 0x07)
	return b
}

// sanitizeLine drops control characters (a row or title never holds
// them; a stray one must not start a sequence).
func sanitizeLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

func appendCUP(b []byte, x, y int) []byte {
	b = append(b, "\x1b["...)
	b = strconv.AppendInt(b, int64(y+1), 10)
	b = append(b, ';')
	b = strconv.AppendInt(b, int64(x+1), 10)
	return append(b, 'H')
}

func appendMode(b []byte, mode int, on bool) []byte {
	b = append(b, "\x1b[?"...)
	b = strconv.AppendInt(b, int64(mode), 10)
	if on {
		return append(b, 'h')
	}
	return append(b, 'l')
}
