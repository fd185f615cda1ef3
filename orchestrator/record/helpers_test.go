package record

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// skipOrFail skips the test, or fails it under TERMSPRAWL_REQUIRE_ALL
// (testenv's one rule).
func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	testenv.SkipOrFail(t, format, args...)
}

// castEv is one event of a test cast.
type castEv struct {
	us   int64
	code byte
	data string
}

// buildCast writes a cast as the recorder does.
func buildCast(cols, rows int, evs []castEv) []byte {
	b := fmt.Appendf(nil, `{"version":2,"width":%d,"height":%d}`+"\n", cols, rows)
	for _, e := range evs {
		b = appendEventHead(b, e.us, e.code)
		b = appendJSONText(b, []byte(e.data))
		b = appendEventTail(b)
	}
	return b
}

// plainFrames replays c the plain way (every output event one Write, a
// resize a Resize) and returns the screen after each number of events.
func plainFrames(t testing.TB, c *parsedCast) []tools.Screen {
	t.Helper()
	s := screen.New(c.info.Width, c.info.Height)
	defer s.Close()
	out := []tools.Screen{s.Snapshot()}
	for i := range c.events {
		e := &c.events[i]
		switch e.code {
		case 'o':
			if err := s.Write(c.data(e, nil)); err != nil {
				t.Fatalf("plain replay: event %d: %v", i, err)
			}
		case 'r':
			if e.sizeOK {
				s.Resize(int(e.cols), int(e.rows))
			}
		}
		out = append(out, s.Snapshot())
	}
	return out
}

func diffScreens(a, b tools.Screen) string {
	var d []string
	if a.Columns != b.Columns || a.Rows != b.Rows {
		d = append(d, fmt.Sprintf("size %dx%d vs %dx%d", a.Columns, a.Rows, b.Columns, b.Rows))
	}
	if a.Cursor != b.Cursor {
		d = append(d, fmt.Sprintf("cursor %+v vs %+v", a.Cursor, b.Cursor))
	}
	if a.Modes != b.Modes {
		d = append(d, fmt.Sprintf("modes %+v vs %+v", a.Modes, b.Modes))
	}
	if a.Title != b.Title {
		d = append(d, fmt.Sprintf("title %q vs %q", a.Title, b.Title))
	}
	if !slices.Equal(a.Lines, b.Lines) {
		for i := range max(len(a.Lines), len(b.Lines)) {
			var x, y string
			if i < len(a.Lines) {
				x = a.Lines[i]
			}
			if i < len(b.Lines) {
				y = b.Lines[i]
			}
			if x != y {
				d = append(d, fmt.Sprintf("row %d: %q vs %q", i, x, y))
			}
		}
	}
	return strings.Join(d, "; ")
}

// A generator of terminal output that exercises what the replay's
// shortcuts must get right.

type gen struct {
	r          *rand.Rand
	cols, rows int
	b          strings.Builder
}

var words = []string{"build", "ok", "error:", "warning", "src/main.go:42:", "PASS", "FAIL", "the", "quick", "brown", "fox", "漢字", "é", "e\u0301", "🙂", "✔️", "a\tb", "100%"}

func (g *gen) word() string { return words[g.r.IntN(len(words))] }

func (g *gen) sgr() string {
	switch g.r.IntN(6) {
	case 0:
		return "\x1b[0m"
	case 1:
		return fmt.Sprintf("\x1b[3%dm", g.r.IntN(8))
	case 2:
		return "\x1b[1;4m"
	case 3:
		return fmt.Sprintf("\x1b[38;5;%dm", g.r.IntN(256))
	case 4:
		return "\x1b[38:2::10:20:30m"
	}
	return "\x1b[m"
}

// line is a line of log output.
func (g *gen) line() {
	n := 1 + g.r.IntN(8)
	for i := range n {
		if g.r.IntN(3) == 0 {
			g.b.WriteString(g.sgr())
		}
		if i > 0 {
			g.b.WriteByte(' ')
		}
		g.b.WriteString(g.word())
	}
	if g.r.IntN(4) == 0 {
		g.b.WriteString("\x1b[K")
	}
	g.b.WriteString("\r\n")
}

// token appends one piece of output; richPct is the chance (percent) of
// something other than log lines.
func (g *gen) token(richPct int) {
	k := g.r.IntN(56)
	if g.r.IntN(100) < richPct {
		k = 56 + g.r.IntN(44)
	}
	switch {
	case k < 45:
		g.line()
	case k < 50: // exactly the width: pending wrap
		g.b.WriteString(strings.Repeat("w", g.cols))
		if g.r.IntN(2) == 0 {
			g.b.WriteString("\r\n")
		}
	case k < 53: // wraps
		g.b.WriteString(strings.Repeat("long ", g.cols/2))
		g.b.WriteString("\r\n")
	case k < 56: // a progress line
		for i := range 4 {
			fmt.Fprintf(&g.b, "\r[%d%%] step %d\x1b[K", i*25, i)
		}
		g.b.WriteString("\r\n")
	case k < 60: // cursor addressing, erase
		fmt.Fprintf(&g.b, "\x1b[%d;%dH%s", 1+g.r.IntN(g.rows+2), 1+g.r.IntN(g.cols+2), g.word())
		if g.r.IntN(2) == 0 {
			g.b.WriteString([]string{"\x1b[J", "\x1b[1J", "\x1b[2J", "\x1b[K", "\x1b[2K", "\x1b[3X", "\x1b[2P", "\x1b[2@"}[g.r.IntN(8)])
		}
	case k < 63: // an Ink-style redraw: up and erase, then rows again
		n := 1 + g.r.IntN(3)
		for range n {
			g.b.WriteString("\x1b[2K\x1b[1A")
		}
		g.b.WriteString("\x1b[2K\x1b[G")
		for range n {
			g.b.WriteString("> " + g.word() + "\r\n")
		}
	case k < 65: // a scroll region and scrolling in it
		top := 1 + g.r.IntN(g.rows)
		fmt.Fprintf(&g.b, "\x1b[%d;%dr", top, top+g.r.IntN(g.rows))
		for range 3 {
			fmt.Fprintf(&g.b, "\x1b[%dH\n%s", g.rows, g.word())
		}
		if g.r.IntN(2) == 0 {
			g.b.WriteString("\x1b[r")
		}
	case k < 68: // the alternate screen
		mode := []string{"1049", "1047", "1049"}[g.r.IntN(3)]
		g.b.WriteString("\x1b[?" + mode + "h")
		for i := range 3 {
			fmt.Fprintf(&g.b, "\x1b[%d;1H%s %s", 1+i, g.word(), g.word())
		}
		if g.r.IntN(3) > 0 {
			g.b.WriteString("\x1b[?" + mode + "l")
		}
	case k < 70: // saving and restoring the cursor
		g.b.WriteString([]string{"\x1b7", "\x1b[s", "\x1b[?1048h"}[g.r.IntN(3)])
		fmt.Fprintf(&g.b, "\x1b[%d;%dH%s", 1+g.r.IntN(g.rows), 1+g.r.IntN(g.cols), g.word())
		if g.r.IntN(2) == 0 {
			g.b.WriteString([]string{"\x1b8", "\x1b[?1048l", "\x1b[?25l\x1b8"}[g.r.IntN(3)])
		}
	case k < 73: // character sets
		g.b.WriteString([]string{"\x1b(0lqqk\x1b(B", "\x1b)0\x0elqk\x0f", "\x1b(0", "\x1b(B", "\x1b)0\x0e", "\x0f", "\x1bN`x", "\x1b*0\x1bnq\x1b(B"}[g.r.IntN(8)])
	case k < 77: // modes
		g.b.WriteString([]string{"\x1b[?1h", "\x1b[?1l", "\x1b[?2004h", "\x1b[?2004l", "\x1b[?1000h", "\x1b[?1003h", "\x1b[?1000l", "\x1b[?1006h",
			"\x1b[?25l", "\x1b[?25h", "\x1b[?7l", "\x1b[?7h", "\x1b[?6h", "\x1b[?6l", "\x1b[20h", "\x1b[20l", "\x1b[?1;2004;1002h", "\x1b[4h", "\x1b[4l"}[g.r.IntN(19)])
	case k < 79: // titles
		g.b.WriteString([]string{"\x1b]0;title " + g.word() + "\x07", "\x1b]2;t2\x1b\\", "\x1b]2;no\x07", "\x1b]2\x07", "\x1b]8;;http://x\x07link\x1b]8;;\x07"}[g.r.IntN(5)])
	case k < 81: // tabs
		g.b.WriteString([]string{"a\tb\tc\r\n", "\x1b[5G\x1bH", "\x1b[3g", "\x1b[g", "\x1b[?5W", "\x1b[2I\x1b[Z"}[g.r.IntN(6)])
	case k < 83: // repeat
		g.b.WriteString([]string{"x\x1b[3b", "\x1b[2b", "\r\n\x1b[4b"}[g.r.IntN(3)])
	case k < 84:
		g.b.WriteString("\x1bc")
	case k < 86: // index, reverse index, next line
		g.b.WriteString([]string{"\x1bD", "\x1bM", "\x1bE", "\x1b[3S", "\x1b[2T", "\x1b[2L", "\x1b[M"}[g.r.IntN(7)])
	case k < 88: // margins
		g.b.WriteString([]string{"\x1b[?69h\x1b[3;10s", "\x1b[?69l", "\x1b[?69h\x1b[s"}[g.r.IntN(3)])
	case k < 90: // odd bytes: a control inside a sequence, an abandoned one
		g.b.WriteString([]string{"\x1b[1\n;5H", "\x1b[\r2K", "\x1b[3\x18m", "\x1b[2\n\x18ab\r\n", "\x1b[\n\x1a", "\x1b[?1049\x1b[m", "\x1b]2;x\x1b[1m", "\x1bP1$qm\x1b\\", "\x1b_apc\x1b\\", "\x07\x00\x7f", "\n\n", "\b\b"}[g.r.IntN(12)])
	case k < 93: // reporting queries
		g.b.WriteString([]string{"\x1b[c", "\x1b[6n", "\x1b[?2004$p", "\x1b]11;?\x07", "\x1b[>c", "\x1b[5 q"}[g.r.IntN(6)])
	default:
		g.line()
	}
}

// genEvents produces n tokens of output cut into events at ASCII bytes,
// with resizes now and then.
func genEvents(seed uint64, cols, rows, tokens, richPct int, resizes bool) []castEv {
	g := &gen{r: rand.New(rand.NewPCG(seed, 7)), cols: cols, rows: rows}
	var evs []castEv
	var us int64
	for range tokens {
		g.token(richPct)
	}
	data := g.b.String()
	for len(data) > 0 {
		n := 1 + g.r.IntN(300)
		if g.r.IntN(10) == 0 {
			n = 1 + g.r.IntN(8)
		}
		n = min(n, len(data))
		for n < len(data) && data[n] >= 0x80 {
			n++
		}
		us += int64(g.r.IntN(20000))
		evs = append(evs, castEv{us: us, code: 'o', data: data[:n]})
		data = data[n:]
		if resizes && g.r.IntN(40) == 0 {
			c, r := max(cols+g.r.IntN(11)-5, 5), max(rows+g.r.IntN(7)-3, 3)
			evs = append(evs, castEv{us: us, code: 'r', data: fmt.Sprintf("%dx%d", c, r)})
		}
		if g.r.IntN(30) == 0 {
			evs = append(evs, castEv{us: us, code: 'm', data: fmt.Sprintf("m%d", len(evs))})
		}
	}
	return evs
}

func intp(i int) *int { return &i }
