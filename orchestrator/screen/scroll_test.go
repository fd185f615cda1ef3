package screen

import (
	"reflect"
	"strings"
	"testing"
)

// scrollPair is a Screen whose line feeds take the fast path and one that
// leaves every line feed to x/vt, fed the same bytes.
type scrollPair struct {
	fast, slow *Screen
	view       CellsView // kept up to date from fast
}

func newScrollPair(t testing.TB, cols, rows int) *scrollPair {
	fastScrollOff = true
	slow := New(cols, rows)
	fastScrollOff = false
	fast := New(cols, rows)
	t.Cleanup(func() { _ = slow.Close(); _ = fast.Close() })
	if fast.t.fastScrolls != 0 || !scrollLayout.ok {
		t.Fatalf("this x/vt's layout is not the one scroll.go knows (layout ok: %v)", scrollLayout.ok)
	}
	return &scrollPair{fast: fast, slow: slow}
}

// write feeds both and reports the first difference a reader could see:
// rows, cursor, modes, revision, the changes since the last revision,
// the styled cells, and a CellsView of the fast one.
func (p *scrollPair) write(data string) string {
	revFast, revSlow := p.fast.Revision(), p.slow.Revision()
	errFast, errSlow := p.fast.Write([]byte(data)), p.slow.Write([]byte(data))
	if (errFast == nil) != (errSlow == nil) {
		return "write errors differ: " + errString(errFast) + " / " + errString(errSlow)
	}
	if a, b := p.fast.Snapshot(), p.slow.Snapshot(); !reflect.DeepEqual(a, b) {
		return "snapshots differ:\nfast " + strings.Join(a.Lines, "|") + "\nslow " + strings.Join(b.Lines, "|")
	}
	if revFast != revSlow {
		return "revisions differ before the write"
	}
	ca, errA := p.fast.ChangesSince(revFast)
	cb, errB := p.slow.ChangesSince(revSlow)
	if !reflect.DeepEqual(ca, cb) || (errA == nil) != (errB == nil) {
		return "changes since the last revision differ"
	}
	if a, b := p.fast.Cells(), p.slow.Cells(); !reflect.DeepEqual(a, b) {
		return "cells differ"
	}
	p.fast.UpdateCells(&p.view)
	if !reflect.DeepEqual(p.view.Grid, p.fast.Cells()) {
		return "the CellsView differs from Cells"
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// The fast line feed leaves nothing a reader can see different from x/vt's
// own, in the cases it takes and the ones it hands back.
func TestFastScrollMatchesVT(t *testing.T) {
	lines := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(f(i))
		}
		return b.String()
	}
	for _, tc := range []struct {
		name   string
		chunks []string
		fast   bool // the fast path must have run
	}{
		{"plain lines", []string{lines(30, func(i int) string { return "line " + strings.Repeat("x", i%9) + "\r\n" })}, true},
		{"chunks cut mid-line", []string{"one\r\ntw", "o\r\nthr", "ee\r\n\r\n\r\n\r\n\r\nfour\r", "\nfive"}, true},
		{"styled text, default background", []string{lines(12, func(i int) string { return "\x1b[1;3" + string(rune('1'+i%7)) + "mred\x1b[0m plain\r\n" })}, true},
		{"a background in the pen (x/vt fills the row)", []string{"\x1b[44m" + lines(10, func(int) string { return "blue\r\n" }) + "\x1b[0m"}, false},
		{"a scroll region", []string{"\x1b[2;4r\x1b[4;1H" + lines(8, func(int) string { return "in region\n" }) + "\x1b[r"}, false},
		{"line feed/new line mode", []string{"\x1b[20h" + lines(8, func(int) string { return "lnm\n" }) + "\x1b[20l"}, false},
		{"LF only, cursor keeps its column", []string{"\x1b[6;1H" + lines(6, func(int) string { return "ab\n" })}, true},
		{"VT and FF", []string{"\x1b[6;1Hv\x0bf\x0cend"}, true},
		{"pending wrap at the last column", []string{"\x1b[6;1H" + strings.Repeat("w", 10) + "\n" + strings.Repeat("z", 10) + "\r\n"}, true},
		{"wide characters and marks", []string{lines(8, func(int) string { return "日本e\u0301\r\n" })}, true},
		{"alternate screen", []string{"main\r\n", "\x1b[?1049h" + lines(9, func(int) string { return "alt\r\n" }), "\x1b[?1049l", lines(7, func(int) string { return "back\r\n" })}, true},
		{"erase and insert around scrolls", []string{lines(7, func(int) string { return "a\r\n" }), "\x1b[2;1H\x1b[L\x1b[6;1H\r\n\x1b[3;1H\x1b[2K\x1b[6;1H\r\nb"}, true},
		{"reset between", []string{lines(7, func(int) string { return "a\r\n" }), "\x1bc", lines(7, func(int) string { return "b\r\n" })}, true},
		{"hyperlinks", []string{lines(7, func(int) string { return "\x1b]8;;http://x\x07link\x1b]8;;\x07\r\n" })}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newScrollPair(t, 10, 6)
			for i, c := range tc.chunks {
				if d := p.write(c); d != "" {
					t.Fatalf("after chunk %d: %s", i, d)
				}
			}
			if got := p.fast.t.fastScrolls > 0; got != tc.fast {
				t.Fatalf("fast line feeds taken: %d, want some: %v", p.fast.t.fastScrolls, tc.fast)
			}
		})
	}
}

// Resizes and a sleep between scrolls keep the two the same.
func TestFastScrollAcrossResizeAndSleep(t *testing.T) {
	p := newScrollPair(t, 10, 6)
	for _, step := range []func() string{
		func() string { return p.write(strings.Repeat("a\r\n", 9)) },
		func() string { p.fast.Resize(8, 4); p.slow.Resize(8, 4); return p.write(strings.Repeat("b\r\n", 5)) },
		func() string {
			p.fast.Sleep()
			p.slow.Sleep()
			st := SeedState{Columns: 8, Rows: 4, CursorY: 3, CursorVisible: true, Lines: []string{"s1", "s2", "s3", "s4"}}
			if err := p.fast.Seed(st); err != nil {
				return err.Error()
			}
			if err := p.slow.Seed(st); err != nil {
				return err.Error()
			}
			return p.write(strings.Repeat("c\r\n", 5))
		},
	} {
		if d := step(); d != "" {
			t.Fatal(d)
		}
	}
}

// FuzzFastScroll: any output, cut anywhere, leaves the fast and the slow
// Screen the same to every reader.
func FuzzFastScroll(f *testing.F) {
	for _, seed := range []string{
		"a\r\nb\r\nc\r\nd\r\ne\r\nf\r\ng\r\n",
		"\x1b[44mx\r\ny\r\nz\r\n\x1b[0mw\r\n\r\n\r\n\r\n",
		"\x1b[2;3r\x1b[3;1H\n\n\n\x1b[r\n\n\n\n\n",
		"\x1b[20h\n\n\n\n\n\n\x1b[20l\n\n\n",
		"\x1b[?1049h\n\n\n\n\n\n\n\x1b[?1049l\n",
		"日本日本日本\r\n\r\n\r\n\r\n\r\n\r\n",
		"abcdefghij\nk\n\n\n\n\n\n",
		"\x1bc\n\n\n\n\n\n\x1b[5;1H\x1b[M\n\n",
	} {
		f.Add([]byte(seed), uint8(5))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		p := newScrollPair(t, 10, 6)
		a := min(int(cut), len(data))
		for i, part := range []string{string(data[:a]), string(data[a:])} {
			if d := p.write(part); d != "" {
				t.Fatalf("after part %d of %q: %s", i, data, d)
			}
		}
	})
}
