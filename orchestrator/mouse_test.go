package orchestrator

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

func TestParseMouseFlags(t *testing.T) {
	for _, tc := range []struct {
		word     string
		tracking int
		utf8     bool
	}{
		{"0000", 0, false}, {"1000", 1000, false}, {"0100", 1002, false}, {"0010", 1003, false},
		{"1001", 1000, true}, {"0001", 0, true}, {"", 0, false}, {"01", 1002, false}, {"xx1", 1003, false},
	} {
		tr, u := parseMouseFlags(tc.word)
		if tr != tc.tracking || u != tc.utf8 {
			t.Errorf("parseMouseFlags(%q) = %d %v, want %d %v", tc.word, tr, u, tc.tracking, tc.utf8)
		}
	}
}

func FuzzParseMouseFlags(f *testing.F) {
	for _, s := range []string{"0000", "1001", "0110", "", "1111111"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, word string) {
		tr, _ := parseMouseFlags(word)
		switch tr {
		case 0, 1000, 1002, 1003:
		default:
			t.Fatalf("tracking %d from %q", tr, word)
		}
	})
}

func TestMouseModeOf(t *testing.T) {
	for _, tc := range []struct {
		m    screen.Modes
		want tools.MouseMode
	}{
		{screen.Modes{}, tools.MouseMode{Tracking: "none", Encoding: "default"}},
		{screen.Modes{MouseTracking: 9}, tools.MouseMode{Tracking: "x10", Encoding: "default"}},
		{screen.Modes{MouseTracking: 1000, MouseUTF8: true}, tools.MouseMode{Tracking: "normal", Encoding: "utf8"}},
		{screen.Modes{MouseTracking: 1002, MouseURXVT: true, MouseUTF8: true}, tools.MouseMode{Tracking: "button", Encoding: "urxvt"}},
		{screen.Modes{MouseTracking: 1003, MouseSGR: true, MouseURXVT: true}, tools.MouseMode{Tracking: "any", Encoding: "sgr"}},
	} {
		if got := mouseModeOf(tc.m); got != tc.want {
			t.Errorf("mouseModeOf(%+v) = %+v, want %+v", tc.m, got, tc.want)
		}
	}
}

// The bytes of each encoding, as xterm sends them (1-based cells).
func TestEncodeMouse(t *testing.T) {
	for _, tc := range []struct {
		enc  string
		ev   mouseEvent
		want string
		ok   bool
	}{
		{"default", mouseEvent{code: 0, col: 0, row: 0}, "\x1b[M\x20\x21\x21", true},
		{"default", mouseEvent{code: 3, col: 9, row: 4}, "\x1b[M\x23\x2a\x25", true},
		{"default", mouseEvent{code: 0, col: 222, row: 0}, "\x1b[M\x20\xff\x21", true},
		{"default", mouseEvent{code: 0, col: 223, row: 0}, "", false},
		{"sgr", mouseEvent{code: 0, col: 9, row: 4}, "\x1b[<0;10;5M", true},
		{"sgr", mouseEvent{code: 2, col: 9, row: 4, release: true}, "\x1b[<2;10;5m", true},
		{"sgr", mouseEvent{code: 65 | 16, col: 299, row: 99}, "\x1b[<81;300;100M", true},
		{"urxvt", mouseEvent{code: 0, col: 9, row: 4}, "\x1b[32;10;5M", true},
		{"urxvt", mouseEvent{code: 3, col: 299, row: 0}, "\x1b[35;300;1M", true},
		{"utf8", mouseEvent{code: 0, col: 9, row: 4}, "\x1b[M\x20\x2a\x25", true},
		// column 300 → 301+32 = 333 = U+014D, two bytes
		{"utf8", mouseEvent{code: 0, col: 300, row: 0}, "\x1b[M\x20\xc5\x8d\x21", true},
		{"utf8", mouseEvent{code: 0, col: 2015, row: 0}, "", false},
	} {
		got, ok := encodeMouse(tc.enc, tc.ev)
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("encodeMouse(%s, %+v) = %q %v, want %q %v", tc.enc, tc.ev, got, ok, tc.want, tc.ok)
		}
	}
}

// The reports of each action in each tracking mode.
func TestMouseEvents(t *testing.T) {
	at := tools.Cell{Row: 2, Column: 5}
	normal := tools.MouseMode{Tracking: "normal", Encoding: "default"}
	sgr := tools.MouseMode{Tracking: "button", Encoding: "sgr"}
	x10 := tools.MouseMode{Tracking: "x10", Encoding: "default"}
	for _, tc := range []struct {
		name string
		a    mouseAction
		mm   tools.MouseMode
		want string
	}{
		{"left click", mouseAction{kind: "click", button: mouseLeft, count: 1, at: at}, normal, "[{0 5 2 false} {3 5 2 false}]"},
		{"right click sgr", mouseAction{kind: "click", button: mouseRight, count: 1, at: at}, sgr, "[{2 5 2 false} {2 5 2 true}]"},
		{"double click ctrl", mouseAction{kind: "click", button: mouseLeft, count: 2, mods: mouseCtrl, at: at}, normal, "[{16 5 2 false} {19 5 2 false} {16 5 2 false} {19 5 2 false}]"},
		{"x10 press only, no modifiers", mouseAction{kind: "click", button: mouseMiddle, count: 1, mods: mouseShift, at: at}, x10, "[{1 5 2 false}]"},
		{"hover", mouseAction{kind: "hover", at: at}, normal, "[{35 5 2 false}]"},
		{"wheel down 2", mouseAction{kind: "wheel", at: at, wheelDown: true, notches: 2}, normal, "[{65 5 2 false} {65 5 2 false}]"},
		{"wheel up alt", mouseAction{kind: "wheel", at: at, notches: 1, mods: mouseAlt}, sgr, "[{72 5 2 false}]"},
		{"drag", mouseAction{kind: "drag", button: mouseLeft, at: at, to: tools.Cell{Row: 2, Column: 7}}, sgr, "[{0 5 2 false} {32 6 2 false} {32 7 2 false} {0 7 2 true}]"},
	} {
		if got := fmt.Sprint(mouseEvents(tc.a, tc.mm)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if n := len(dragPath(tools.Cell{}, tools.Cell{Row: 40, Column: 199})); n != 16 {
		t.Errorf("a long drag moves in %d steps, want 16", n)
	}
}

// decodeMouse parses one report of any encoding back (the test's own,
// independent reading of the formats).
func decodeMouse(enc string, b []byte) (mouseEvent, bool) {
	var ev mouseEvent
	switch enc {
	case "sgr":
		var final byte
		var x, y int
		if n, _ := fmt.Sscanf(string(b), "\x1b[<%d;%d;%d%c", &ev.code, &x, &y, &final); n != 4 {
			return ev, false
		}
		ev.col, ev.row, ev.release = x-1, y-1, final == 'm'
		return ev, true
	case "urxvt":
		var c, x, y int
		if n, _ := fmt.Sscanf(string(b), "\x1b[%d;%d;%dM", &c, &x, &y); n != 3 {
			return ev, false
		}
		return mouseEvent{code: c - 32, col: x - 1, row: y - 1}, true
	case "utf8":
		r := []rune(string(b[3:]))
		if len(r) != 3 {
			return ev, false
		}
		return mouseEvent{code: int(r[0]) - 32, col: int(r[1]) - 33, row: int(r[2]) - 33}, true
	default:
		if len(b) != 6 {
			return ev, false
		}
		return mouseEvent{code: int(b[3]) - 32, col: int(b[4]) - 33, row: int(b[5]) - 33}, true
	}
}

// Whatever the cell and button, an encoded report decodes to what was
// encoded, or the encoder said the cell does not fit.
func FuzzEncodeMouse(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint16(0), uint16(0), false)
	f.Add(uint8(3), uint8(1), uint16(222), uint16(50), true)
	f.Add(uint8(65), uint8(2), uint16(999), uint16(999), false)
	f.Add(uint8(35), uint8(3), uint16(94), uint16(95), false)
	f.Fuzz(func(t *testing.T, code, encIdx uint8, col, row uint16, release bool) {
		enc := []string{"default", "utf8", "sgr", "urxvt"}[encIdx%4]
		ev := mouseEvent{code: int(code) % 128, col: int(col) % 1000, row: int(row) % 1000}
		if enc == "sgr" {
			ev.release = release
		}
		b, ok := encodeMouse(enc, ev)
		if !ok {
			if enc == "sgr" || enc == "urxvt" {
				t.Fatalf("%s refused %+v", enc, ev)
			}
			return
		}
		if !bytes.HasPrefix(b, []byte("\x1b[")) {
			t.Fatalf("%q does not start with CSI", b)
		}
		back, ok := decodeMouse(enc, b)
		if !ok || back != ev {
			t.Fatalf("%s: %+v encoded as %q decodes to %+v %v", enc, ev, b, back, ok)
		}
	})
}
