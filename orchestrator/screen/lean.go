package screen

import (
	"reflect"
	"unsafe"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/vt"
)

// The alternate screen is allocated only while it is shown.
//
// x/vt keeps two full cell buffers per emulator, the main and the
// alternate screen, at 112 bytes a cell (uv.Cell: content, three colours,
// a hyperlink, width): 525 KiB each at 120x40. Entering the alternate
// screen clears it (setAltScreenMode), so while the main screen is shown
// the alternate buffer holds nothing anyone can read. A term keeps it at
// one cell and grows it on entry (the AltScreen callback, which x/vt
// calls after switching and clearing, before any output reaches the new
// screen), and shrinks it again once the main screen is back (checked at
// every commit, which also covers a resize and a full reset).

// altScreens returns pointers to the emulator's main and alternate
// screens, or nils if this x/vt's layout differs (the alternate screen
// then stays allocated: more memory, same behaviour).
func altScreens(emu *vt.Emulator) (main, alt *vt.Screen) {
	scrs := reflect.ValueOf(emu).Elem().FieldByName("scrs")
	if !scrs.IsValid() || scrs.Kind() != reflect.Array || scrs.Len() != 2 ||
		scrs.Type().Elem() != reflect.TypeFor[vt.Screen]() || !scrs.Index(0).CanAddr() {
		return nil, nil
	}
	buf := scrs.Index(1).FieldByName("buf")
	if !buf.IsValid() || buf.Type() != reflect.TypeFor[*uv.RenderBuffer]() {
		return nil, nil
	}
	return (*vt.Screen)(unsafe.Pointer(scrs.Index(0).UnsafeAddr())),
		(*vt.Screen)(unsafe.Pointer(scrs.Index(1).UnsafeAddr()))
}

// setScreenBuf replaces a screen's cell buffer. buf nil makes the next
// Screen.Resize allocate a fresh one.
func setScreenBuf(s *vt.Screen, buf *uv.RenderBuffer) {
	f := reflect.ValueOf(s).Elem().FieldByName("buf")
	*(**uv.RenderBuffer)(unsafe.Pointer(f.UnsafeAddr())) = buf
}

// shrinkAlt drops the alternate screen's cells (a one-cell buffer takes
// their place) unless it is shown. Called with Screen.mu held.
func (t *term) shrinkAlt() {
	if t.alt == nil || t.emu == nil || t.emu.IsAltScreen() {
		return
	}
	if t.alt.Width() == 1 && t.alt.Height() == 1 {
		return
	}
	setScreenBuf(t.alt, nil)
	t.alt.Resize(1, 1) // a fresh 1x1 buffer and scroll region
}

// growAlt gives the alternate screen the main screen's size; x/vt calls
// it (through the AltScreen callback) right after switching to it.
func (t *term) growAlt() {
	if t.alt == nil || t.main == nil {
		return
	}
	w, h := t.main.Width(), t.main.Height()
	if t.alt.Width() != w || t.alt.Height() != h {
		setScreenBuf(t.alt, nil)
		t.alt.Resize(w, h)
	}
}

// AltCells reports the cells the alternate screen holds (1 while the main
// screen is shown), for tests and memory accounting.
func (s *Screen) altCells() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.t == nil || s.t.alt == nil || s.t.emu == nil {
		return -1
	}
	return s.t.alt.Width() * s.t.alt.Height()
}
