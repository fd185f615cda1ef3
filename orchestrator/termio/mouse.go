package termio

import (
	"strconv"

	"github.com/charmbracelet/x/ansi"

	"github.com/termsprawl/termsprawl/tools"
)

// Mouse modes. The mirror learns them from the pane's output (DECSET 9,
// 1000, 1002, 1003 for tracking; 1005, 1006, 1015 for the encoding) and,
// on every seed, from tmux's formats. tmux 3.3a tracks 1000/1002/1003
// (#{mouse_standard_flag} #{mouse_button_flag} #{mouse_all_flag}; its
// #{mouse_any_flag} means "any of them"), 1005 (#{mouse_utf8_flag}) and
// 1006 (#{mouse_sgr_flag}), but neither X10 (9) nor urxvt (1015): the
// engine keeps those two from the stream across a seed, and they are
// unknown after an orchestrator restart until the program sets them again.

// The tracking modes' DECSET numbers (x/ansi names them).
var (
	trackX10    = ansi.ModeMouseX10.Mode()         // 9
	trackNormal = ansi.ModeMouseNormal.Mode()      // 1000
	trackButton = ansi.ModeMouseButtonEvent.Mode() // 1002
	trackAny    = ansi.ModeMouseAnyEvent.Mode()    // 1003
)

// ParseMouseFlags reads tmux's mouse word of a seed: the standard, button,
// all-motion and UTF-8 flags, one digit each, as the DECSET number of the
// tracking (0 for none) and whether UTF-8 encoding (1005) is on.
func ParseMouseFlags(word string) (tracking int, utf8 bool) {
	flag := func(i int) bool { return i < len(word) && word[i] == '1' }
	switch {
	case flag(2):
		tracking = trackAny
	case flag(1):
		tracking = trackButton
	case flag(0):
		tracking = trackNormal
	}
	return tracking, flag(3)
}

// Modes are the mouse modes a program set: the DECSET number of its
// tracking (0, 9, 1000, 1002, 1003) and its encodings.
type Modes struct {
	Tracking         int
	SGR, URXVT, UTF8 bool
}

// MouseMode is the contract's view of the modes. When several encodings
// are on, the one xterm prefers wins: SGR, then urxvt, then UTF-8.
func (m Modes) MouseMode() tools.MouseMode {
	mm := tools.MouseMode{Tracking: tools.MouseTrackingNone, Encoding: tools.MouseEncodingDefault}
	switch m.Tracking {
	case trackX10:
		mm.Tracking = tools.MouseTrackingX10
	case trackNormal:
		mm.Tracking = tools.MouseTrackingNormal
	case trackButton:
		mm.Tracking = tools.MouseTrackingButton
	case trackAny:
		mm.Tracking = tools.MouseTrackingAny
	}
	switch {
	case m.SGR:
		mm.Encoding = tools.MouseEncodingSGR
	case m.URXVT:
		mm.Encoding = tools.MouseEncodingURXVT
	case m.UTF8:
		mm.Encoding = tools.MouseEncodingUTF8
	}
	return mm
}

// Event is one report: the button code (ansi.EncodeMouseButton: button,
// modifier and motion bits), the 0-based cell, and for SGR whether it is
// a release.
type Event struct {
	Code     int
	Col, Row int
	Release  bool
}

// Encode encodes ev for the encoding enc (a tools.MouseEncoding* name), or
// reports false when the cell cannot be expressed in it (X10 bytes stop at
// column/row 223; the UTF-8 encoding at 2015). The reports use 1-based
// cells.
func Encode(enc string, ev Event) ([]byte, bool) {
	x, y := ev.Col+1, ev.Row+1
	switch enc {
	case tools.MouseEncodingSGR:
		if ev.Code < 0 || ev.Code > 255 || ev.Col < 0 || ev.Row < 0 {
			return nil, false
		}
		return []byte(ansi.MouseSgr(byte(ev.Code), ev.Col, ev.Row, ev.Release)), true
	case tools.MouseEncodingURXVT:
		// CSI Cb+32 ; Cx ; Cy M — x/ansi has no encoder for it.
		b := []byte("\x1b[")
		b = strconv.AppendInt(b, int64(ev.Code+32), 10)
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(x), 10)
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(y), 10)
		return append(b, 'M'), true
	case tools.MouseEncodingUTF8:
		b := []byte("\x1b[M")
		for _, v := range []int{ev.Code + 32, x + 32, y + 32} {
			if v > 2047 {
				return nil, false
			}
			b = appendUTF8Coord(b, v)
		}
		return b, true
	default:
		// Our own, not ansi.MouseX10: that one UTF-8-encodes values from
		// 128 on and wraps past 255 (see the package comment).
		if ev.Code+32 > 255 || x+32 > 255 || y+32 > 255 {
			return nil, false
		}
		return []byte{0x1b, '[', 'M', byte(ev.Code + 32), byte(x + 32), byte(y + 32)}, true
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

// Action is what a mouse operation wants to do, before encoding.
type Action struct {
	Kind             string           // click, hover, wheel, drag
	Button           ansi.MouseButton // ansi.MouseLeft, MouseMiddle or MouseRight
	Count            int              // clicks
	Shift, Alt, Ctrl bool
	At, To           tools.Cell
	WheelDown        bool
	Notches          int
}

// Allowed tells whether the tracking mode (a tools.MouseTracking* name)
// lets a program see the action, and else names the mode it needs, as a
// phrase for the error (CONTRACT §11).
func (a Action) Allowed(tracking string) (bool, string) {
	switch a.Kind {
	case "hover":
		return tracking == tools.MouseTrackingAny, "any-motion tracking (DECSET 1003)"
	case "drag":
		return tracking == tools.MouseTrackingButton || tracking == tools.MouseTrackingAny, "button-event or any-motion tracking (DECSET 1002 or 1003)"
	}
	return tracking != tools.MouseTrackingNone, "mouse tracking (DECSET 9, 1000, 1002 or 1003)"
}

// Events turns an action into the reports the program would get from a
// real terminal in mode mm. X10 tracking (9) reports presses only,
// without modifiers; the other modes report releases too (as button 3
// except in SGR, which names the button), wheel notches as buttons 64/65
// with no release, and motion with 32 added.
func Events(a Action, mm tools.MouseMode) []Event {
	x10 := mm.Tracking == tools.MouseTrackingX10
	sgr := mm.Encoding == tools.MouseEncodingSGR
	shift, alt, ctrl := a.Shift, a.Alt, a.Ctrl
	if x10 {
		shift, alt, ctrl = false, false, false
	}
	code := func(b ansi.MouseButton, motion bool) int {
		return int(ansi.EncodeMouseButton(b, motion, shift, alt, ctrl))
	}
	release := func(b ansi.MouseButton, c tools.Cell) Event {
		if sgr {
			return Event{Code: code(b, false), Col: c.Column, Row: c.Row, Release: true}
		}
		return Event{Code: code(ansi.MouseRelease, false), Col: c.Column, Row: c.Row}
	}
	press := func(b ansi.MouseButton, c tools.Cell) Event {
		return Event{Code: code(b, false), Col: c.Column, Row: c.Row}
	}
	var evs []Event
	switch a.Kind {
	case "click":
		for range max(a.Count, 1) {
			evs = append(evs, press(a.Button, a.At))
			if !x10 {
				evs = append(evs, release(a.Button, a.At))
			}
		}
	case "hover":
		// Motion with no button: the release code plus the motion flag.
		evs = append(evs, Event{Code: code(ansi.MouseNone, true), Col: a.At.Column, Row: a.At.Row})
	case "wheel":
		b := ansi.MouseWheelUp
		if a.WheelDown {
			b = ansi.MouseWheelDown
		}
		for range a.Notches {
			evs = append(evs, Event{Code: code(b, false), Col: a.At.Column, Row: a.At.Row})
		}
	case "drag":
		evs = append(evs, press(a.Button, a.At))
		for _, c := range DragPath(a.At, a.To) {
			evs = append(evs, Event{Code: code(a.Button, true), Col: c.Column, Row: c.Row})
		}
		evs = append(evs, release(a.Button, a.To))
	}
	return evs
}

// DragPath is the cells a drag moves through after its start, ending at
// to: a straight line in at most 16 steps (programs see motion reports as
// a real mouse would send them, without a flood for long drags).
func DragPath(from, to tools.Cell) []tools.Cell {
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

// EncodeAction encodes every report of a for mode mm, or reports false if
// a cell of it cannot be expressed in mm's encoding.
func EncodeAction(a Action, mm tools.MouseMode) ([]byte, bool) {
	var out []byte
	for _, ev := range Events(a, mm) {
		b, ok := Encode(mm.Encoding, ev)
		if !ok {
			return nil, false
		}
		out = append(out, b...)
	}
	return out, true
}

// MouseSpec is a mouse operation's request, as the tool server decoded it.
type MouseSpec struct {
	Kind      string      // click, hover, wheel, drag
	At        *tools.Cell // at, or drag's from
	To        *tools.Cell // drag's to
	Ref       string
	Button    string
	Count     int
	Modifiers []string
	DeltaY    int
	// Locator names a node of the semantic tree instead of At or Ref.
	Locator *tools.SemanticLocator
}

// DragTo is a drag's end, nil for other actions.
func (a *Action) DragTo() *tools.Cell {
	if a.Kind != "drag" {
		return nil
	}
	return &a.To
}

// ActionOf checks and translates a MouseSpec.
func ActionOf(spec MouseSpec) (Action, error) {
	a := Action{Kind: spec.Kind, Count: max(spec.Count, 1)}
	switch spec.Kind {
	case "click", "hover", "wheel", "drag":
	default:
		return a, tools.Errorf(tools.KindUsage, "unknown mouse action %q", spec.Kind)
	}
	targets := 0
	for _, set := range []bool{spec.At != nil, spec.Ref != "", spec.Locator != nil} {
		if set {
			targets++
		}
	}
	if targets != 1 && spec.Kind != "drag" {
		return a, tools.Errorf(tools.KindUsage, "give exactly one of \"at\" ({row, column}), \"ref\" (from terminal_query) and \"locator\" (a node of the semantic tree)")
	}
	if spec.At != nil {
		a.At = *spec.At
	}
	if spec.Kind == "drag" {
		if spec.At == nil || spec.To == nil {
			return a, tools.Errorf(tools.KindUsage, "terminal_drag needs from and to")
		}
		a.To = *spec.To
	}
	switch spec.Button {
	case "", "left":
		a.Button = ansi.MouseLeft
	case "middle":
		a.Button = ansi.MouseMiddle
	case "right":
		a.Button = ansi.MouseRight
	default:
		return a, tools.Errorf(tools.KindUsage, "button %q: use left, middle or right", spec.Button)
	}
	for _, m := range spec.Modifiers {
		switch m {
		case "shift":
			a.Shift = true
		case "alt":
			a.Alt = true
		case "ctrl":
			a.Ctrl = true
		default:
			return a, tools.Errorf(tools.KindUsage, "modifier %q: use shift, alt or ctrl", m)
		}
	}
	if spec.Kind == "wheel" {
		if spec.DeltaY == 0 {
			return a, tools.Errorf(tools.KindUsage, "delta_y must not be 0: positive scrolls down, negative up")
		}
		a.WheelDown, a.Notches = spec.DeltaY > 0, min(max(spec.DeltaY, -spec.DeltaY), tools.MaxWheelDelta)
	}
	return a, nil
}
