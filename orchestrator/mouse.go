package orchestrator

import (
	"strconv"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// Mouse modes. The mirror learns them from the pane's output (DECSET 9,
// 1000, 1002, 1003 for tracking; 1005, 1006, 1015 for the encoding) and,
// on every seed, from tmux's formats. tmux 3.3a tracks 1000/1002/1003
// (#{mouse_standard_flag} #{mouse_button_flag} #{mouse_all_flag}; its
// #{mouse_any_flag} means "any of them"), 1005 (#{mouse_utf8_flag}) and
// 1006 (#{mouse_sgr_flag}), but neither X10 (9) nor urxvt (1015): those
// two are kept from the stream across a seed, and are unknown after an
// orchestrator restart until the program sets them again.

// parseMouseFlags reads the seed format's mouse word: the standard, button,
// all-motion and UTF-8 flags of tmux, one digit each.
func parseMouseFlags(word string) (tracking int, utf8 bool) {
	flag := func(i int) bool { return i < len(word) && word[i] == '1' }
	switch {
	case flag(2):
		tracking = 1003
	case flag(1):
		tracking = 1002
	case flag(0):
		tracking = 1000
	}
	return tracking, flag(3)
}

// keepStreamMouse keeps, across a seed, the mouse modes tmux cannot
// report: X10 tracking when tmux sees no tracking, and urxvt encoding.
func keepStreamMouse(st *screen.SeedState, m screen.Modes) {
	if st.MouseTracking == 0 && m.MouseTracking == 9 {
		st.MouseTracking = 9
		st.Mouse = true
	}
	st.MouseURXVT = m.MouseURXVT
}

// mouseModeOf is the contract's view of the mirror's mouse modes. When
// several encodings are on, the one xterm prefers wins: SGR, then urxvt,
// then UTF-8.
func mouseModeOf(m screen.Modes) tools.MouseMode {
	mm := tools.MouseMode{Tracking: tools.MouseTrackingNone, Encoding: tools.MouseEncodingDefault}
	switch m.MouseTracking {
	case 9:
		mm.Tracking = tools.MouseTrackingX10
	case 1000:
		mm.Tracking = tools.MouseTrackingNormal
	case 1002:
		mm.Tracking = tools.MouseTrackingButton
	case 1003:
		mm.Tracking = tools.MouseTrackingAny
	}
	switch {
	case m.MouseSGR:
		mm.Encoding = tools.MouseEncodingSGR
	case m.MouseURXVT:
		mm.Encoding = tools.MouseEncodingURXVT
	case m.MouseUTF8:
		mm.Encoding = tools.MouseEncodingUTF8
	}
	return mm
}

// Mouse buttons as the report's button number (low two bits), and the
// flags added to it.
const (
	mouseLeft    = 0
	mouseMiddle  = 1
	mouseRight   = 2
	mouseRelease = 3 // X10-style release (the button is not known)

	mouseShift  = 4
	mouseAlt    = 8 // "meta"
	mouseCtrl   = 16
	mouseMotion = 32
	mouseWheel  = 64 // 64 wheel up, 65 wheel down
)

// mouseEvent is one report: the button code (with modifier and motion
// flags), 0-based cell, and for SGR whether it is a release.
type mouseEvent struct {
	code    int
	col     int
	row     int
	release bool
}

// encodeMouse encodes ev for the encoding enc, or reports false when the
// cell cannot be expressed in it (X10 bytes stop at column/row 223; the
// UTF-8 encoding at 2015). The encodings use 1-based cells.
func encodeMouse(enc string, ev mouseEvent) ([]byte, bool) {
	x, y := ev.col+1, ev.row+1
	switch enc {
	case tools.MouseEncodingSGR:
		final := byte('M')
		if ev.release {
			final = 'm'
		}
		b := []byte("\x1b[<")
		b = strconv.AppendInt(b, int64(ev.code), 10)
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(x), 10)
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(y), 10)
		return append(b, final), true
	case tools.MouseEncodingURXVT:
		b := []byte("\x1b[")
		b = strconv.AppendInt(b, int64(ev.code+32), 10)
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(x), 10)
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(y), 10)
		return append(b, 'M'), true
	case tools.MouseEncodingUTF8:
		b := []byte("\x1b[M")
		for _, v := range []int{ev.code + 32, x + 32, y + 32} {
			if v > 2047 {
				return nil, false
			}
			b = appendUTF8Coord(b, v)
		}
		return b, true
	default:
		if ev.code+32 > 255 || x+32 > 255 || y+32 > 255 {
			return nil, false
		}
		return []byte{0x1b, '[', 'M', byte(ev.code + 32), byte(x + 32), byte(y + 32)}, true
	}
}

// appendUTF8Coord appends v as xterm's 1005 mode does: one byte below 128,
// else two bytes of UTF-8.
func appendUTF8Coord(b []byte, v int) []byte {
	if v < 0x80 {
		return append(b, byte(v))
	}
	return append(b, byte(0xc0|v>>6), byte(0x80|v&0x3f))
}

// mouseAction is what a mouse operation wants to do, before encoding.
type mouseAction struct {
	kind      string // click, hover, wheel, drag
	button    int    // mouseLeft, mouseMiddle, mouseRight
	count     int    // clicks
	mods      int    // mouseShift | mouseAlt | mouseCtrl
	at, to    tools.Cell
	wheelDown bool
	notches   int
}

// needs is the tracking an action requires, as a sentence for the error
// when it is missing (CONTRACT §11).
func (a mouseAction) allowed(tracking string) (bool, string) {
	switch a.kind {
	case "hover":
		return tracking == tools.MouseTrackingAny, "any-motion tracking (DECSET 1003)"
	case "drag":
		return tracking == tools.MouseTrackingButton || tracking == tools.MouseTrackingAny, "button-event or any-motion tracking (DECSET 1002 or 1003)"
	}
	return tracking != tools.MouseTrackingNone, "mouse tracking (DECSET 9, 1000, 1002 or 1003)"
}

// mouseEvents turns an action into the reports the program would get from
// a real terminal in mode mm. X10 tracking (9) reports presses only,
// without modifiers; the other modes report releases too (as button 3
// except in SGR, which names the button), wheel notches as buttons 64/65
// with no release, and motion with 32 added.
func mouseEvents(a mouseAction, mm tools.MouseMode) []mouseEvent {
	x10 := mm.Tracking == tools.MouseTrackingX10
	sgr := mm.Encoding == tools.MouseEncodingSGR
	mods := a.mods
	if x10 {
		mods = 0
	}
	release := func(button int, c tools.Cell) mouseEvent {
		if sgr {
			return mouseEvent{code: button | mods, col: c.Column, row: c.Row, release: true}
		}
		return mouseEvent{code: mouseRelease | mods, col: c.Column, row: c.Row}
	}
	press := func(button int, c tools.Cell) mouseEvent {
		return mouseEvent{code: button | mods, col: c.Column, row: c.Row}
	}
	var evs []mouseEvent
	switch a.kind {
	case "click":
		for range max(a.count, 1) {
			evs = append(evs, press(a.button, a.at))
			if !x10 {
				evs = append(evs, release(a.button, a.at))
			}
		}
	case "hover":
		// Motion with no button: button code 3 plus the motion flag.
		evs = append(evs, mouseEvent{code: mouseRelease | mouseMotion | mods, col: a.at.Column, row: a.at.Row})
	case "wheel":
		code := mouseWheel
		if a.wheelDown {
			code++
		}
		for range a.notches {
			evs = append(evs, mouseEvent{code: code | mods, col: a.at.Column, row: a.at.Row})
		}
	case "drag":
		evs = append(evs, press(a.button, a.at))
		for _, c := range dragPath(a.at, a.to) {
			evs = append(evs, mouseEvent{code: a.button | mouseMotion | mods, col: c.Column, row: c.Row})
		}
		evs = append(evs, release(a.button, a.to))
	}
	return evs
}

// dragPath is the cells a drag moves through after its start, ending at
// to: a straight line in at most 16 steps (programs see motion reports as
// a real mouse would send them, without a flood for long drags).
func dragPath(from, to tools.Cell) []tools.Cell {
	dr, dc := to.Row-from.Row, to.Column-from.Column
	steps := min(max(abs(dr), abs(dc)), 16)
	if steps == 0 {
		return []tools.Cell{to}
	}
	out := make([]tools.Cell, 0, steps)
	for i := 1; i <= steps; i++ {
		out = append(out, tools.Cell{Row: from.Row + dr*i/steps, Column: from.Column + dc*i/steps})
	}
	return out
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// encodeAction encodes every report of a, or reports the first cell the
// encoding cannot express.
func encodeAction(a mouseAction, mm tools.MouseMode) ([]byte, bool) {
	var out []byte
	for _, ev := range mouseEvents(a, mm) {
		b, ok := encodeMouse(mm.Encoding, ev)
		if !ok {
			return nil, false
		}
		out = append(out, b...)
	}
	return out, true
}
