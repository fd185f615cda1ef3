package screen

import (
	"reflect"
	"unsafe"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// A line feed on the last row of a full-screen scroll region moves every
// row up one. x/vt does that by copying every cell of the screen (120 × 40
// cells of 112 bytes: half a megabyte a line) and marking every row
// touched, so a node printing lines cost half the orchestrator's CPU in
// that copy, and every reader of the cells had to read every row again.
//
// A term handles that one case itself: it rotates the buffer's rows (40
// slice headers), blanks the new last row, and moves the touched marks
// with their rows, so only the new row (and rows written since) count as
// touched. It counts the shift in live.shift, which commit applies to the
// published rows and the row stamps (rows that only moved keep their
// stamp: a copy of them taken earlier is still good, one row further up).
// Every other case — a scroll region, the line feed/new line mode, a
// background colour in the pen, a layout of x/vt this code does not know
// — goes to x/vt's own handler, unchanged. TestFastScrollMatchesVT and
// FuzzFastScroll compare both ways byte for byte.

// fastScrollOff disables the fast path (tests compare against x/vt's own
// scrolling).
var fastScrollOff = false

// scrollAccess is where vt.Screen keeps its buffer pointer (the
// pending-wrap flag and the control-code handlers are found per emulator
// in installFastScroll). ok is false if this x/vt's layout differs.
type scrollAccess struct {
	ok        bool
	bufOffset uintptr
}

var scrollLayout = func() scrollAccess {
	f, ok := reflect.TypeFor[vt.Screen]().FieldByName("buf")
	if !ok || f.Type != reflect.TypeFor[*uv.RenderBuffer]() {
		return scrollAccess{}
	}
	return scrollAccess{ok: true, bufOffset: f.Offset}
}()

// screenBuf is s's cell buffer.
func screenBuf(s *vt.Screen) *uv.RenderBuffer {
	return *(**uv.RenderBuffer)(unsafe.Add(unsafe.Pointer(s), scrollLayout.bufOffset))
}

// installFastScroll registers the fast line feed on t's emulator (tried
// before x/vt's own, which runs whenever this returns false).
func (t *term) installFastScroll(lv *live) {
	if fastScrollOff || !scrollLayout.ok || t.main == nil || t.alt == nil {
		return
	}
	pf := phantomField(t.emu)
	hs := reflect.ValueOf(t.emu).Elem().FieldByName("ccHandlers")
	if !pf.IsValid() || !hs.IsValid() || hs.Type() != reflect.TypeFor[map[byte][]vt.CcHandler]() || !hs.CanAddr() {
		return
	}
	phantom := (*bool)(unsafe.Pointer(pf.UnsafeAddr()))
	handlers := (*map[byte][]vt.CcHandler)(unsafe.Pointer(hs.UnsafeAddr()))
	if *handlers == nil {
		return
	}
	feed := func() bool {
		if lv.newLineMode {
			return false // LNM: a carriage return too; x/vt's way
		}
		scr := t.main
		if t.emu.IsAltScreen() {
			scr = t.alt
		}
		if !scrollRow(scr) {
			return false
		}
		*phantom = false
		lv.shift++
		t.fastScrolls++
		return true
	}
	for _, b := range []byte{ansi.LF, ansi.VT, ansi.FF} {
		(*handlers)[b] = append((*handlers)[b], feed)
	}
}

// scrollRow moves every row of scr up one if the cursor is on the last
// row of a scroll region that is the whole screen and the pen has no
// background (x/vt would fill the new row with it), and reports whether
// it did.
func scrollRow(scr *vt.Screen) bool {
	w, h := scr.Width(), scr.Height()
	cur := scr.Cursor()
	if cur.Y != h-1 || cur.X < 0 || cur.X >= w || cur.Pen.Bg != nil || h < 2 {
		return false
	}
	if r := scr.ScrollRegion(); r.Min.X != 0 || r.Min.Y != 0 || r.Max.X != w || r.Max.Y != h {
		return false
	}
	buf := screenBuf(scr)
	if buf == nil || buf.Buffer == nil || len(buf.Lines) != h {
		return false
	}
	lines := buf.Lines
	top := lines[0]
	if len(top) != w {
		return false
	}
	copy(lines, lines[1:])
	for x := range top {
		top[x] = uv.EmptyCell
	}
	lines[h-1] = top
	// The marks move with their rows (Touched may be shorter than the
	// screen: rows past its end are untouched).
	if m := min(len(buf.Touched), h); m > 0 {
		copy(buf.Touched[:m-1], buf.Touched[1:m])
		buf.Touched[m-1] = nil
	}
	buf.TouchLine(0, h-1, w)
	return true
}
