package screen

import (
	"fmt"
	"strings"
	"testing"
)

// plainScroll is lines of text that scroll the screen, as a shell or a
// compiler prints them.
func plainScroll(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%6d: the quick brown fox jumps over the lazy dog \x1b[32mok\x1b[0m\r\n", i)
	}
	return []byte(b.String())
}

// tuiRedraw is cursor-addressed full-screen redraws with colours, as a
// full-screen program repaints (every row rewritten each frame).
func tuiRedraw(cols, rows, frames int) []byte {
	var b strings.Builder
	for f := range frames {
		b.WriteString("\x1b[?25l")
		for y := range rows {
			fmt.Fprintf(&b, "\x1b[%d;1H\x1b[3%dm", y+1, (y+f)%8)
			line := []rune(fmt.Sprintf("frame %d row %d ", f, y))
			for len(line) < cols {
				line = append(line, '·', '─')
			}
			b.WriteString(string(line[:cols]))
			b.WriteString("\x1b[0m")
		}
		b.WriteString("\x1b[?25h")
	}
	return []byte(b.String())
}

// chunks splits data into writes of about size bytes (tmux delivers output
// in pieces of a few KiB; a line at a time is the worst case).
func chunks(data []byte, size int) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		n := min(size, len(data))
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

func benchWrites(b *testing.B, cols, rows int, data []byte, size int, raw, vtScroll bool) {
	parts := chunks(data, size)
	fastScrollOff = raw || vtScroll // x/vt's own line feeds (scroll.go)
	s := New(cols, rows)
	fastScrollOff = false
	defer s.Close()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, p := range parts {
			if raw {
				_, _ = s.t.emu.Write(p) // x/vt alone, for reference
			} else if err := s.Write(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(s.Revision())/float64(b.N), "revs/op")
}

func benchSizes(b *testing.B, gen func(cols, rows int) []byte) {
	for _, sz := range []struct{ cols, rows int }{{80, 24}, {200, 50}} {
		data := gen(sz.cols, sz.rows)
		for _, chunk := range []int{64, 4096} {
			for _, mode := range []string{"", "/vt-scroll", "/vt-only"} {
				name := fmt.Sprintf("%dx%d/chunk=%d%s", sz.cols, sz.rows, chunk, mode)
				b.Run(name, func(b *testing.B) {
					benchWrites(b, sz.cols, sz.rows, data, chunk, mode == "/vt-only", mode == "/vt-scroll")
				})
			}
		}
	}
}

func BenchmarkWritePlainScroll(b *testing.B) {
	benchSizes(b, func(cols, rows int) []byte { return plainScroll(500) })
}

func BenchmarkWriteTUIRedraw(b *testing.B) {
	benchSizes(b, func(cols, rows int) []byte { return tuiRedraw(cols, rows, 10) })
}
