package orchestrator

import (
	"bytes"
	"image/png"
	"os"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

func TestGlyphTable(t *testing.T) {
	if err := glyphsComplete(); err != nil {
		t.Fatal(err)
	}
}

func TestRenderPNG(t *testing.T) {
	snap := tools.Screen{Columns: 20, Rows: 3, Cursor: tools.Cursor{X: 2, Y: 2, Visible: true},
		Lines: []string{"Hello, World! 123", "日本 ok ~{}", "$ "}}
	data, err := RenderPNG(snap)
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
	if _, err := RenderPNG(tools.Screen{Columns: 1000, Rows: 1000}); err == nil {
		t.Fatal("a 1000x1000 screenshot was not refused")
	}
}
