package monitor

import (
	"fmt"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/orchestrator/screen"
)

// screenShown is a Shown of a real mirror (screen.Screen), as the engine's
// Showing is, without the node around it.
type screenShown struct {
	s *screen.Screen
	f *screen.Frames
}

func (s screenShown) Frame() (render.Grid, []uint64)     { return s.f.Next(s.s) }
func (s screenShown) Changed() (uint64, <-chan struct{}) { return s.s.WaitState() }
func (s screenShown) Closing() <-chan struct{}           { return s.s.Done() }
func (s screenShown) Close()                             {}

// BenchmarkWatcherFrame is the orchestrator's cost of one frame of the
// shown node (issue 23's "orchestrator CPU with a dashboard"): the node
// prints a line (scrolling a full 120x40 screen of coloured prompt-like
// lines, or rewriting one status line in place), and the watcher turns the
// new revision into the screen event it sends.
func BenchmarkWatcherFrame(b *testing.B) {
	for _, mode := range []string{"scroll", "status"} {
		b.Run(mode, func(b *testing.B) {
			s := screen.New(120, 40)
			defer s.Close()
			for i := range 40 {
				_ = s.Write(fmt.Appendf(nil, "\x1b[32muser@host\x1b[0m:\x1b[34m~/src\x1b[0m$ echo line %d of the warm-up\r\n", i))
			}
			w := newWatcher(&hub{}, "n")
			enc := newEncoder()
			var m memo
			sh := screenShown{s, &screen.Frames{}}
			rev, _ := sh.Changed()
			w.update(enc, &m, sh, rev, true)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if mode == "scroll" {
					_ = s.Write(fmt.Appendf(nil, "\x1b[32muser@host\x1b[0m:\x1b[34m~/src\x1b[0m$ echo printing line %d\r\n", i))
				} else {
					_ = s.Write(fmt.Appendf(nil, "\x1b[40;1H\x1b[7m status %d \x1b[0m\x1b[K", i))
				}
				rev, _ := sh.Changed()
				w.update(enc, &m, sh, rev, false)
			}
		})
	}
}
