package monitor

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/render"
)

func decodeRow(t *testing.T, raw json.RawMessage) lineMsg {
	t.Helper()
	var l lineMsg
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatalf("row %s: %v", raw, err)
	}
	return l
}

// TestEncodeRow: runs merge cells of one style; colours are the
// screenshot palette's; attributes, wide characters and the cursor.
func TestEncodeRow(t *testing.T) {
	t.Parallel()
	e := newEncoder()
	cell := func(s string, mod func(*render.Cell)) render.Cell {
		c := render.Cell{Content: s, Width: 1}
		if mod != nil {
			mod(&c)
		}
		return c
	}
	red := func(c *render.Cell) { c.Fg = render.ANSI(1) }
	for _, tc := range []struct {
		name  string
		cells []render.Cell
		cur   render.Cursor
		want  []run
	}{
		{"plain merges, blanks are spaces", []render.Cell{cell("a", nil), cell("b", nil), cell("", nil)}, render.Cursor{},
			[]run{{T: "ab "}}},
		{"ANSI red", []render.Cell{cell("R", red), cell("x", nil)}, render.Cursor{},
			[]run{{T: "R", F: "#cd3131"}, {T: "x"}}},
		{"bold brightens ANSI red", []render.Cell{cell("R", func(c *render.Cell) { red(c); c.Attrs = render.AttrBold })}, render.Cursor{},
			[]run{{T: "R", F: "#f14c4c", A: attrBold}}},
		{"256 and 24-bit", []render.Cell{cell("o", func(c *render.Cell) { c.Fg = render.Indexed(208) }), cell("g", func(c *render.Cell) { c.Bg = render.RGB(1, 2, 3) })}, render.Cursor{},
			[]run{{T: "o", F: "#ff8700"}, {T: "g", B: "#010203"}}},
		{"inverse swaps the defaults", []render.Cell{cell("i", func(c *render.Cell) { c.Attrs = render.AttrInverse })}, render.Cursor{},
			[]run{{T: "i", F: "#1e1e1e", B: "#d4d4d4", A: attrInverse}}},
		{"faint blends", []render.Cell{cell("d", func(c *render.Cell) { c.Attrs = render.AttrFaint })}, render.Cursor{},
			[]run{{T: "d", F: "#797979", A: attrFaint}}},
		{"underline styles and colour", []render.Cell{cell("u", func(c *render.Cell) {
			c.Underline = render.UnderlineCurly
			c.UnderlineColor = render.ANSI(2)
		})}, render.Cursor{},
			[]run{{T: "u", U: "#0dbc79", A: int(render.UnderlineCurly) << underlineBits}}},
		{"italic strike", []render.Cell{cell("s", func(c *render.Cell) { c.Attrs = render.AttrItalic | render.AttrStrikethrough })}, render.Cursor{},
			[]run{{T: "s", A: attrItalic | attrStrike}}},
		{"wide character and its continuation", []render.Cell{{Content: "中", Width: 2}, {Width: 0}, cell("x", nil)}, render.Cursor{},
			[]run{{T: "中", W: 1}, {T: "x"}}},
		{"block cursor splits the run and inverts", []render.Cell{cell("a", nil), cell("b", nil), cell("c", nil)}, render.Cursor{X: 1, Visible: true},
			[]run{{T: "a"}, {T: "b", F: "#1e1e1e", B: "#d4d4d4", C: 1}, {T: "c"}}},
		{"bar cursor at a pending wrap is in the last column", []render.Cell{cell("a", nil), cell("b", nil)}, render.Cursor{X: 2, Visible: true, Shape: render.CursorBar},
			[]run{{T: "a"}, {T: "b", C: 3}}},
		{"hidden cursor", []render.Cell{cell("a", nil), cell("b", nil)}, render.Cursor{X: 1},
			[]run{{T: "ab"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := render.Grid{Columns: len(tc.cells), Rows: 1, Cells: tc.cells, Cursor: tc.cur}
			got := decodeRow(t, e.row(g, 0))
			gj, _ := json.Marshal(got.R)
			wj, _ := json.Marshal(tc.want)
			if string(gj) != string(wj) {
				t.Fatalf("runs %s, want %s", gj, wj)
			}
		})
	}
}

// FuzzMonitorPath: whatever the path and query, the handler answers
// without panicking, and only the four files and the event stream under
// the right capability are served (200).
func FuzzMonitorPath(f *testing.F) {
	for _, s := range []string{"/monitor/", "/monitor/x/", "/monitor/%s/", "/monitor/%s/app.js", "/monitor/%s/../x",
		"/monitor/%s/events?show=", "/monitor/%s/events?show=a&show=b", "/monitor/%s//", "/monitor/%s/icon.svg?"} {
		f.Add(s)
	}
	saved := Saved{Capability: strings.Repeat("ab", 16)}
	m, err := New(Config{Saved: saved, Engine: newFakeEngine(), HostPort: func() string { return "127.0.0.1:1" }})
	if err != nil {
		f.Fatal(err)
	}
	m.Close() // streams end at once
	f.Fuzz(func(t *testing.T, p string) {
		target := strings.ReplaceAll(p, "%s", saved.Capability)
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:1"+target, nil)
		if err != nil {
			return
		}
		req.Host = "127.0.0.1:1"
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return
		}
		name := strings.TrimPrefix(req.URL.Path, Prefix+saved.Capability+"/")
		if _, ok := files[name]; !ok && name != "events" {
			t.Fatalf("%q (path %q) was served", target, req.URL.Path)
		}
	})
}

// TestRowsMemo: rows reused from the last frame (same row, scrolled rows,
// around a moving cursor) encode exactly as freshly encoded rows.
func TestRowsMemo(t *testing.T) {
	t.Parallel()
	e := newEncoder()
	grid := func(first int, cur render.Cursor) render.Grid {
		g := render.NewGrid(6, 5)
		for y := range 5 {
			for x, r := range fmt.Sprintf("l%04d", first+y) {
				c := render.Cell{Content: string(r), Width: 1}
				if (first+y)%3 == 0 {
					c.Fg = render.ANSI(1)
				}
				g.Set(x, y, c)
			}
		}
		g.Cursor = cur
		return g
	}
	var m memo
	reusedWant := []int{0, 3, 5, 8, 12, 12} // cumulative: scrolled rows and rows away from the cursor
	for i, g := range []render.Grid{
		grid(0, render.Cursor{X: 1, Y: 4, Visible: true}),
		grid(1, render.Cursor{X: 1, Y: 4, Visible: true}),  // scrolled by one
		grid(3, render.Cursor{X: 2, Y: 2, Visible: true}),  // by two, the cursor moved up
		grid(3, render.Cursor{X: 2, Y: 3, Visible: true}),  // only the cursor moved
		grid(3, render.Cursor{}),                           // hidden
		grid(20, render.Cursor{X: 0, Y: 0, Visible: true}), // nothing reusable
	} {
		got := e.rows(g, nil, &m)
		var fresh memo
		want := e.rows(g, nil, &fresh)
		for y := range want {
			if string(got[y]) != string(want[y]) {
				t.Fatalf("frame %d row %d: memo %s, fresh %s", i, y, got[y], want[y])
			}
		}
		if m.reused != reusedWant[i] {
			t.Errorf("after frame %d: %d rows reused, want %d", i, m.reused, reusedWant[i])
		}
	}
}

// With stamps, rows are matched by stamp, not compared: a row whose stamp
// is one of the last frame's (in place or scrolled) reuses its runs, and
// the result is still what a fresh encoding gives.
func TestRowsMemoStamps(t *testing.T) {
	t.Parallel()
	e := newEncoder()
	grid := func(texts ...string) render.Grid {
		g := render.NewGrid(4, len(texts))
		for y, text := range texts {
			for x, r := range text {
				g.Set(x, y, render.Cell{Content: string(r), Width: 1})
			}
		}
		return g
	}
	var m memo
	e.rows(grid("aaaa", "bbbb", "cccc"), []uint64{1, 2, 3}, &m)
	for i, step := range []struct {
		g      render.Grid
		stamps []uint64
		reused int // cumulative
	}{
		{grid("aaaa", "XbbX", "cccc"), []uint64{1, 4, 3}, 2}, // row 1 changed
		{grid("XbbX", "cccc", "dddd"), []uint64{4, 3, 5}, 4}, // scrolled by one
		{grid("XbbX", "cccc", "dddd"), []uint64{6, 7, 8}, 4}, // new stamps: encoded again
		{grid("XbbX", "cccc", "dddd"), nil, 7},               // no stamps: compared by cells
	} {
		got := e.rows(step.g, step.stamps, &m)
		var fresh memo
		want := e.rows(step.g, nil, &fresh)
		for y := range want {
			if string(got[y]) != string(want[y]) {
				t.Fatalf("step %d row %d: %s, fresh %s", i, y, got[y], want[y])
			}
		}
		if m.reused != step.reused {
			t.Fatalf("after step %d: %d rows reused, want %d", i, m.reused, step.reused)
		}
	}
}

func TestScrollOf(t *testing.T) {
	t.Parallel()
	rows := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i, r := range s {
			out[i] = []byte(r)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		old, new [][]byte
		want     int
	}{
		{"same", rows("a", "b", "c", "d"), rows("a", "b", "c", "d"), 0},
		{"one row edited", rows("a", "b", "c", "d"), rows("a", "X", "c", "d"), 0},
		{"up one", rows("a", "b", "c", "d"), rows("b", "c", "d", "e"), 1},
		{"up two", rows("a", "b", "c", "d", "e"), rows("c", "d", "e", "f", "g"), 2},
		{"up one, prompt row edited", rows("a", "b", "c", "$ x"), rows("b", "c", "$ x", "$ "), 1},
		{"further than maxScroll", rows("a", "b", "c", "d", "e", "f", "g"), rows("g", "h", "i", "j", "k", "l", "m"), 0},
		{"blank screen", rows("", "", "", ""), rows("x", "", "", ""), 0},
		{"resized", rows("a", "b"), rows("b", "c", "d"), 0},
	} {
		if got := scrollOf(tc.old, tc.new); got != tc.want {
			t.Errorf("%s: scroll %d, want %d", tc.name, got, tc.want)
		}
	}
}

// appendJSON is json.Marshal's encoding of a screen message.
func TestScreenMsgJSON(t *testing.T) {
	t.Parallel()
	for _, m := range []screenMsg{
		{Node: "n", Rev: 7, Cols: 80, Rows: 24, Full: true, Cursor: cursorMsg{X: 3, Y: 4, Visible: true, Shape: 2},
			Lines: []json.RawMessage{json.RawMessage(`{"y":0,"r":[{"t":"a"}]}`), json.RawMessage(`{"y":1,"r":[]}`)}},
		{Node: "odd \"id\" <&>", Rev: 1 << 40, Cols: 1, Rows: 1, Scroll: 3, Lines: []json.RawMessage{}},
	} {
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.appendJSON(nil); string(got) != string(want) {
			t.Errorf("appendJSON\n%s\njson.Marshal\n%s", got, want)
		}
	}
}
