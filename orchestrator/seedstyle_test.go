package orchestrator

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// tmuxCells is tmux's own view of a pane, cell by cell: its `capture-pane
// -e` rows painted as a terminal shows them (one after the other, the pen
// going on from row to row, which is how tmux writes them: a style that
// continues is not repeated at a row's start).
func tmuxCells(t *testing.T, srv *tmuxtest.Server, id string, cols, rows int) render.Grid {
	t.Helper()
	out := srv.Must("capture-pane", "-e", "-p", "-t", "=ts-"+id+":")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	ref := screen.New(cols, rows)
	defer ref.Close()
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(l)
	}
	if err := ref.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	return ref.Cells()
}

// requireCellsAsTmux compares the mirror's cells with tmux's: content,
// colours, underline and attributes.
func requireCellsAsTmux(t *testing.T, got, want render.Grid, what string) {
	t.Helper()
	var diffs []string
	for y := 0; y < want.Rows; y++ {
		for x := 0; x < want.Columns; x++ {
			g, w := got.At(x, y), want.At(x, y)
			gc, wc := strings.TrimSpace(g.Content), strings.TrimSpace(w.Content)
			if gc != wc || g.Fg != w.Fg || g.Bg != w.Bg || g.Attrs != w.Attrs || g.Underline != w.Underline {
				diffs = append(diffs, fmt.Sprintf("(%d,%d): mirror %+v, tmux %+v", x, y, g, w))
			}
		}
	}
	if len(diffs) > 0 {
		if len(diffs) > 10 {
			diffs = append(diffs[:10], fmt.Sprintf("… %d cells in all", len(diffs)))
		}
		t.Fatalf("%s: the mirror's cells differ from tmux's:\n%s", what, strings.Join(diffs, "\n"))
	}
}

// A reseed keeps styles that go on from one row to the next (CONTRACT
// §26): after `printf "\e[1mBOLD-A\nBOLD-B\e[0m"` BOLD-B is bold in the
// mirror after a reseed, after a rest and the wake of a screenshot, cell
// by cell as tmux has it.
func TestReseedKeepsStylesAcrossRows(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.RestAfter = -1; c.IdleAfter = -1 })
	id := launch(t, o, "sh", "-c", `printf '\033[1mBOLD-A\nBOLD-B\033[0m plain\n\033[31;44;4mRED\nSTILL-RED\n\n  and more\033[0m\n\033[7mREV '; printf 'END\033[0m\n'; exec cat`)
	waitText(t, o, id, "END")
	n := o.node(id)
	reseed := func() {
		t.Helper()
		n.Mu.Lock()
		before := n.Reseeds
		n.Mu.Unlock()
		n.RequestReseed()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			n.Mu.Lock()
			done := n.Reseeds > before
			n.Mu.Unlock()
			if done {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the requested reseed never ran")
			}
		}
	}
	reseed()
	want := tmuxCells(t, srv, id, 80, 24)
	if c := want.At(0, 1); c.Content != "B" || c.Attrs&render.AttrBold == 0 {
		t.Fatalf("tmux's BOLD-B is %+v: the test's reference is wrong", c)
	}
	got := n.Scr.Cells()
	requireCellsAsTmux(t, got, want, "after a reseed")

	// A screenshot of a mirror that dropped its emulator (a rest) builds
	// it again from tmux: the same cells.
	n.Scr.Sleep() // what a rest does (rest.go)
	if !n.Scr.Asleep() {
		t.Fatal("the mirror did not rest")
	}
	requireCellsAsTmux(t, n.Cells(tctx(t)), want, "after a rest and the wake of a screenshot")
}
