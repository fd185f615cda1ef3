package orchestrator

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"os"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
)

func TestGlyphTable(t *testing.T) {
	if err := glyphsComplete(); err != nil {
		t.Fatal(err)
	}
}

func TestRenderPNG(t *testing.T) {
	snap := screen.Snapshot{Columns: 20, Rows: 3, Cursor: screen.Cursor{X: 2, Y: 2, Visible: true},
		Lines: []string{"Hello, World! 123", "日本 ok ~{}", "$ "}}
	data, err := renderPNG(snap)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 20*cellW || b.Dy() != 3*cellH {
		t.Fatalf("image is %v", b)
	}
	lit := func(cx, cy int) int {
		n := 0
		for y := cy * cellH; y < (cy+1)*cellH; y++ {
			for x := cx * cellW; x < (cx+1)*cellW; x++ {
				if r, _, _, _ := img.At(x, y).RGBA(); r > 0x8000 {
					n++
				}
			}
		}
		return n
	}
	// 'H' is drawn, a space is not, the cursor cell is inverted (mostly lit).
	if lit(0, 0) == 0 || lit(6, 0) != 0 || lit(2, 2) < cellW*cellH/2 {
		t.Fatalf("lit pixels: H %d, space %d, cursor %d", lit(0, 0), lit(6, 0), lit(2, 2))
	}
	if p := os.Getenv("TERMSPRAWL_SHOT_OUT"); p != "" {
		os.WriteFile(p, data, 0o600) // to look at it
	}
	if _, err := renderPNG(screen.Snapshot{Columns: 1000, Rows: 1000}); err == nil {
		t.Fatal("a 1000x1000 screenshot was not refused")
	}
}

func TestSnapshotScreenshotAndScrollbackThroughAPI(t *testing.T) {
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	id := apiLaunch(t, op, "sh", "-c", "echo shot-me; sleep 60")
	apiWaitScreen(t, op, id, "shot-me")
	var out struct {
		Lines      []string
		Scrollback []string
		Image      string
	}
	apiOK(t, op, "terminal_snapshot", apiM{"terminal": id, "screenshot": true, "scrollback_lines": 10}, &out)
	if out.Image == "" || len(out.Lines) == 0 {
		t.Fatalf("snapshot with screenshot: %+v", out)
	}
	raw, err := base64.StdEncoding.DecodeString(out.Image)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
		t.Fatalf("value.image is not a PNG: %v", err)
	}
	if out.Scrollback == nil {
		t.Fatalf("scrollback_lines with no history yet should give an empty list, got none")
	}
}
