package screen

import (
	"fmt"
	"strconv"

	"github.com/charmbracelet/x/ansi"
)

// SeedState is tmux's view of a pane, as read in one control-mode round trip
// (`display -p` of the format flags ; `capture-pane -p -e -N`).
type SeedState struct {
	Columns, Rows int // pane size (#{pane_width} #{pane_height})

	CursorX, CursorY int  // #{cursor_x} #{cursor_y}, 0-based
	CursorVisible    bool // #{cursor_flag}

	AltScreen      bool // #{alternate_on}
	AppCursor      bool // #{keypad_cursor_flag}
	BracketedPaste bool // #{bracketed_paste}
	Mouse          bool // any of #{mouse_standard_flag} #{mouse_button_flag} #{mouse_any_flag}
	MouseSGR       bool // #{mouse_sgr_flag} (optional)
	// MouseTracking is the tracking mode's DECSET number (9, 1000, 1002,
	// 1003; #{mouse_standard_flag} #{mouse_button_flag} #{mouse_all_flag});
	// when set it wins over Mouse. MouseUTF8 is #{mouse_utf8_flag};
	// MouseURXVT (1015) has no tmux 3.3a format, nor has X10 (9).
	MouseTracking int
	MouseUTF8     bool
	MouseURXVT    bool

	// Scroll region, 0-based and inclusive (#{scroll_region_upper}
	// #{scroll_region_lower}). Both zero means the whole screen.
	ScrollTop, ScrollBottom int

	// Lines is exactly `capture-pane -p -e -N` of the current screen: one
	// entry per row, SGR escapes included, trailing spaces kept; rows may be
	// shorter than Columns. Missing rows are blank, extra rows ignored.
	Lines []string

	// PrimaryLines (optional, only used with AltScreen) is the main screen
	// hidden behind the alternate one (`capture-pane -p -e -N -a`), and
	// PrimaryCursorX/Y its saved cursor (#{alternate_saved_x}
	// #{alternate_saved_y}); they are what the mirror shows once the program
	// leaves the alternate screen. Without them the main screen is blank
	// until the next seed.
	PrimaryLines                   []string
	PrimaryCursorX, PrimaryCursorY int

	Title string // #{pane_title}
}

func (st *SeedState) validate() error {
	if st.Columns <= 0 || st.Rows <= 0 {
		return fmt.Errorf("%w: size %dx%d", ErrInvalidSeed, st.Columns, st.Rows)
	}
	return nil
}

// seedBytes renders st as the byte stream that paints it onto a fresh
// emulator of st's size.
func seedBytes(st *SeedState) []byte {
	cols, rows := st.Columns, st.Rows
	b := make([]byte, 0, 64+len(st.Lines)*(cols+16)+len(st.PrimaryLines)*(cols+16))
	b = append(b, 0x18)          // CAN: abort any sequence left half-parsed
	b = append(b, "\x1bc"...)    // RIS: modes, screens, margins, charsets, pen
	b = append(b, "\x1b[?7l"...) // no autowrap while painting: rows never wrap
	if st.AltScreen {
		if st.PrimaryLines != nil {
			b = paintRows(b, st.PrimaryLines, cols, rows)
			b = cup(b, st.PrimaryCursorX, st.PrimaryCursorY, cols, rows)
		}
		b = append(b, "\x1b[?1049h"...) // saves the cursor, enters, clears
	}
	b = paintRows(b, st.Lines, cols, rows)
	b = append(b, "\x1b[?7h"...)

	top, bottom := st.ScrollTop, st.ScrollBottom
	if top != 0 || bottom != 0 {
		top = max(0, min(top, rows-1))
		bottom = max(0, min(bottom, rows-1))
		if top < bottom && (top != 0 || bottom != rows-1) {
			b = append(b, "\x1b["...)
			b = strconv.AppendInt(b, int64(top+1), 10)
			b = append(b, ';')
			b = strconv.AppendInt(b, int64(bottom+1), 10)
			b = append(b, 'r') // DECSTBM (homes the cursor)
		}
	}
	b = cup(b, st.CursorX, st.CursorY, cols, rows)
	if st.AppCursor {
		b = append(b, ansi.SetModeCursorKeys...)
	}
	if st.BracketedPaste {
		b = append(b, ansi.SetModeBracketedPaste...)
	}
	switch {
	case st.MouseTracking == 9 || st.MouseTracking == 1000 || st.MouseTracking == 1002 || st.MouseTracking == 1003:
		b = append(b, "\x1b[?"...)
		b = strconv.AppendInt(b, int64(st.MouseTracking), 10)
		b = append(b, 'h')
	case st.Mouse:
		b = append(b, ansi.SetModeMouseNormal...)
	}
	if st.MouseSGR {
		b = append(b, ansi.SetModeMouseExtSgr...)
	}
	if st.MouseUTF8 {
		b = append(b, ansi.SetModeMouseExtUtf8...)
	}
	if st.MouseURXVT {
		b = append(b, ansi.SetModeMouseExtUrxvt...)
	}
	if !st.CursorVisible {
		b = append(b, ansi.ResetModeTextCursorEnable...)
	}
	return b
}

// paintRows paints each line at the start of its row, cut at the right edge
// (a wide character that does not fit is dropped, as tmux would have put it
// on the next row), and resets SGR after the last row only: capture-pane
// -e does not repeat at a row's start a style that goes on from the row
// before (its pen carries over), so the pen carries over here too
// (CONTRACT §26: a reseeded screen keeps styles across rows).
func paintRows(b []byte, lines []string, cols, rows int) []byte {
	for i, line := range lines {
		if i >= rows {
			break
		}
		b = cup(b, 0, i, cols, rows)
		// Display width never exceeds the byte length, so short rows need
		// no measuring.
		if len(line) > cols {
			line = ansi.Truncate(line, cols, "")
		}
		b = append(b, line...)
	}
	return append(b, "\x1b[0m"...)
}

// cup appends a CUP to the 0-based (x, y), clamped to the screen.
func cup(b []byte, x, y, cols, rows int) []byte {
	x = max(0, min(x, cols-1))
	y = max(0, min(y, rows-1))
	b = append(b, "\x1b["...)
	b = strconv.AppendInt(b, int64(y+1), 10)
	b = append(b, ';')
	b = strconv.AppendInt(b, int64(x+1), 10)
	return append(b, 'H')
}
