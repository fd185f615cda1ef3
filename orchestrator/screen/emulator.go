package screen

import (
	"io"
	"reflect"
	"unsafe"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// live is the state the emulator reports through callbacks and handlers
// while it runs. It is written only from inside calls into the emulator,
// which always happen with Screen.mu held, so it shares that mutex.
type live struct {
	title          string
	appCursor      bool
	bracketedPaste bool
	mouse          int // the active mouse tracking mode (9, 1000, 1002, 1003), 0 if none
	mouseSGR       bool
	mouseUTF8      bool // 1005
	mouseURXVT     bool // 1015
	// fullScan is set when the emulator changed rows without marking them
	// touched (alternate screen switch, full reset, new emulator): the next
	// commit compares every row instead of the touched ones only.
	fullScan bool
	// newLineMode is LNM (a line feed also returns the carriage).
	newLineMode bool
	// shift counts the rows the fast line feed moved the screen up since
	// the last commit (scroll.go).
	shift int
}

// term is one emulator and the goroutine draining its input pipe. All its
// fields are guarded by Screen.mu (it is only reached through Screen).
type term struct {
	emu *vt.Emulator
	// main and alt are the emulator's two screens (nil if this x/vt's
	// layout is unknown); alt is kept at one cell while main is shown
	// (see lean.go).
	main, alt *vt.Screen
	drainDone chan struct{} // closed when the drain goroutine has returned
	poisoned  bool          // the emulator panicked; unusable until replaced
	// fastScrolls counts the line feeds scroll.go handled (tests).
	fastScrolls int
}

// newTerm builds an emulator of the given size wired to lv.
//
// Memory: vt.NewEmulator allocates a 4 MiB parser data buffer (shrunk to
// parserDataSize by shrinkParser), plus two cell buffers of cols*rows
// cells (112 B per cell); the alternate one is shrunk to one cell while
// it is not shown (shrinkAlt). Scrollback is removed (see
// disableScrollback).
func newTerm(cols, rows int, lv *live) *term {
	emu := vt.NewEmulator(cols, rows)
	disableScrollback(emu)
	shrinkParser(emu)
	t := &term{emu: emu, drainDone: make(chan struct{})}
	t.main, t.alt = altScreens(emu)
	t.shrinkAlt()
	emu.SetCallbacks(vt.Callbacks{
		EnableMode:  func(m ansi.Mode) { lv.setMode(m, true) },
		DisableMode: func(m ansi.Mode) { lv.setMode(m, false) },
		// Switching screens clears the touched marks of the new screen.
		AltScreen: func(on bool) {
			lv.fullScan = true
			if on {
				t.growAlt()
			}
		},
	})
	lv.fullScan = true
	registerGuards(emu, lv)
	t.installFastScroll(lv)

	// x/vt writes answers to queries (DA, DSR, DECRQM, OSC 10/11/12 ...) into
	// an io.Pipe and blocks until they are read. tmux has already answered
	// the program, so read and discard forever; stop closes the pipe.
	go func() {
		defer close(t.drainDone)
		drain(emu)
	}()
	return t
}

// drainSize is the buffer drain reads answers with: they are a few dozen
// bytes, and io.Copy into io.Discard would hold an 8 KiB buffer per node
// for the emulator's whole life.
const drainSize = 256

// drain reads r to its end or first error and discards what it read.
func drain(r io.Reader) {
	buf := make([]byte, drainSize)
	for {
		if _, err := r.Read(buf); err != nil {
			return
		}
	}
}

// stop ends the drain goroutine and waits for it. It closes the writing end
// of the input pipe rather than calling Emulator.Close, which writes an
// unsynchronised field that the draining Read reads (a data race).
func (t *term) stop() {
	if t == nil || t.emu == nil {
		return
	}
	if c, ok := t.emu.InputPipe().(io.Closer); ok {
		_ = c.Close()
	} else {
		_ = t.emu.Close()
	}
	<-t.drainDone
	t.emu = nil
}

// setMode tracks the modes the snapshot reports. x/vt has no getters for
// them; the callbacks fire on every set/reset, including a full reset.
func (lv *live) setMode(m ansi.Mode, on bool) {
	switch m {
	case ansi.ModeCursorKeys:
		lv.appCursor = on
	case ansi.ModeBracketedPaste:
		lv.bracketedPaste = on
	case ansi.ModeLineFeedNewLine:
		lv.newLineMode = on
	case ansi.ModeMouseX10, ansi.ModeMouseNormal, ansi.ModeMouseButtonEvent, ansi.ModeMouseAnyEvent:
		// As tmux does: setting one tracking mode replaces the others,
		// resetting any of them turns mouse tracking off.
		if on {
			lv.mouse = int(m.Mode())
		} else {
			lv.mouse = 0
		}
	case ansi.ModeMouseExtSgr:
		lv.mouseSGR = on
	case ansi.ModeMouseExtUtf8:
		lv.mouseUTF8 = on
	case ansi.ModeMouseExtUrxvt:
		lv.mouseURXVT = on
	}
}

// registerGuards registers CSI and OSC handlers that run before x/vt's own
// (handlers are tried last-registered first). The CSI guards rewrite the
// parameters in place — ansi.Params aliases the parser's parameter array,
// which the default DECSTBM handler reads again — and return false so the
// default handler then runs with sane values.
func registerGuards(emu *vt.Emulator, lv *live) {
	// DECSTBM: a bottom margin beyond the screen makes later scrolls index
	// past the buffer and panic. tmux clamps both margins to the screen.
	emu.RegisterCsiHandler('r', func(params ansi.Params) bool {
		clampParams(params, 2, emu.Height())
		return false
	})
	// DECSLRM (only when DECLRMM is set; otherwise SCOSC ignores them).
	emu.RegisterCsiHandler('s', func(params ansi.Params) bool {
		clampParams(params, 2, emu.Width())
		return false
	})
	// CHT / CBT loop once per count even when the cursor cannot move.
	for _, cmd := range []int{'I', 'Z'} {
		emu.RegisterCsiHandler(cmd, func(params ansi.Params) bool {
			clampParams(params, 1, emu.Width())
			return false
		})
	}
	// REP prints once per count and ECH visits every cell of its (unclipped)
	// rectangle; tmux limits both to the rest of the line.
	for _, cmd := range []int{'b', 'X'} {
		emu.RegisterCsiHandler(cmd, func(params ansi.Params) bool {
			clampParams(params, 1, max(1, emu.Width()-emu.CursorPosition().X))
			return false
		})
	}
	// RIS drops the touched marks along with the screen contents.
	emu.RegisterEscHandler('c', func() bool {
		lv.fullScan = true
		// x/vt's reset does not know the UTF-8 and urxvt mouse encodings.
		lv.mouseUTF8, lv.mouseURXVT = false, false
		return false
	})
	// OSC 0 / 2: x/vt ignores a title containing ';'. Everything after the
	// first ';' is the title, as in tmux.
	for _, cmd := range []int{0, 2} {
		emu.RegisterOscHandler(cmd, func(data []byte) bool {
			for i, b := range data {
				if b == ';' {
					lv.title = string(data[i+1:])
					return true
				}
			}
			return true
		})
	}
}

// clampParams limits the first n parameters to [0, max]; missing ones are
// left alone. Overflowing digit runs in the parser produce negative values.
func clampParams(params ansi.Params, n, max int) {
	for i := 0; i < n && i < len(params); i++ {
		v := params[i].Param(-1)
		switch {
		case v == -1 && params[i].Param(-2) == -2:
			// missing parameter: keep the default
		case v < 0:
			params[i] = ansi.Param(0)
		case v > max:
			params[i] = ansi.Param(max)
		}
	}
}

// disableScrollback removes the scrollback of both of the emulator's screens.
//
// x/vt gives each screen a 10000-line scrollback (~120 B per cell), and
// Emulator.SetScrollbackSize only reaches the main screen (and cannot go
// below one line). The alternate screen's keeps growing whenever a full-screen
// program scrolls: measured 241 MiB after 10000 lines at 200 columns. History
// is read from tmux, so neither is needed; a nil scrollback is supported by
// every x/vt code path ("Pass nil to disable scrollback"), and skipping the
// per-line clone doubles scrolling throughput.
//
// The screens are unexported, so this reaches them with reflect and unsafe.
// It checks names and types first and reports false if the layout differs
// (another x/vt version); the main screen then keeps a one-line scrollback.
func disableScrollback(emu *vt.Emulator) bool {
	emu.SetScrollbackSize(1) // public fallback, main screen only
	scrs := reflect.ValueOf(emu).Elem().FieldByName("scrs")
	screenType := reflect.TypeFor[vt.Screen]()
	sbType := reflect.TypeFor[*vt.Scrollback]()
	if !scrs.IsValid() || scrs.Kind() != reflect.Array || scrs.Type().Elem() != screenType {
		return false
	}
	for i := range scrs.Len() {
		f := scrs.Index(i).FieldByName("scrollback")
		if !f.IsValid() || f.Type() != sbType || !f.CanAddr() {
			return false
		}
	}
	for i := range scrs.Len() {
		f := scrs.Index(i).FieldByName("scrollback")
		*(**vt.Scrollback)(unsafe.Pointer(f.UnsafeAddr())) = nil
	}
	return true
}

// appendRow appends the text of row y, trailing spaces trimmed. A wide
// character is one string position: its padding cells are skipped.
func appendRow(dst []byte, emu *vt.Emulator, y, cols int) []byte {
	start := len(dst)
	for x := 0; x < cols; {
		c := emu.CellAt(x, y)
		if c == nil || c.Content == "" {
			dst = append(dst, ' ')
			x++
			continue
		}
		if len(c.Content) == 1 {
			dst = append(dst, c.Content[0])
		} else {
			dst = append(dst, c.Content...)
		}
		if c.Width > 1 {
			x += c.Width
		} else {
			x++
		}
	}
	end := len(dst)
	for end > start && dst[end-1] == ' ' {
		end--
	}
	return dst[:end]
}

// parserDataSize bounds the data of one OSC/DCS/APC string the emulator
// keeps (titles, hyperlinks); longer strings are cut. x/vt's own 4 MiB per
// emulator would dominate a node's memory; the mirror reads nothing from
// these strings but titles (OSC 0/2) and hyperlink targets, which fit.
const parserDataSize = 4 << 10

// shrinkParser replaces x/vt's 4 MiB parser data buffer with a
// parserDataSize one. The parser is unexported, so this reaches it with
// reflect and unsafe after checking its type; it reports false (and
// changes nothing) if the layout differs in another x/vt version.
func shrinkParser(emu *vt.Emulator) bool {
	f := reflect.ValueOf(emu).Elem().FieldByName("parser")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*ansi.Parser]() || f.IsNil() {
		return false
	}
	(*ansi.Parser)(unsafe.Pointer(f.Pointer())).SetDataSize(parserDataSize)
	return true
}

// phantomField returns x/vt's pending-wrap flag (the cursor has written
// the last column and the next character wraps), or an invalid Value if
// this x/vt has none.
func phantomField(emu *vt.Emulator) reflect.Value {
	f := reflect.ValueOf(emu).Elem().FieldByName("atPhantom")
	if !f.IsValid() || f.Kind() != reflect.Bool || !f.CanAddr() {
		return reflect.Value{}
	}
	return f
}

// atPhantom reports the pending-wrap state. tmux reports the cursor one
// past the last column then, and so does the mirror.
func atPhantom(emu *vt.Emulator) bool {
	f := phantomField(emu)
	return f.IsValid() && f.Bool()
}

// setPhantom sets the pending-wrap state (after a seed whose cursor tmux
// reported one past the last column).
func setPhantom(emu *vt.Emulator, on bool) {
	if f := phantomField(emu); f.IsValid() {
		*(*bool)(unsafe.Pointer(f.UnsafeAddr())) = on
	}
}
