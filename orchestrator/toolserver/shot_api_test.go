package toolserver

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

func decodeShot(t *testing.T, snap tools.Snapshot) (w, h int) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(snap.Image)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("value.image is not a PNG: %v", err)
	}
	if out := os.Getenv("TERMSPRAWL_SHOT_OUT"); out != "" { // to look at it
		os.WriteFile(filepath.Join(out, snap.Terminal+".png"), raw, 0o600)
	}
	return img.Bounds().Dx(), img.Bounds().Dy()
}

func TestSnapshotScreenshotAndScrollbackThroughAPI(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	id := apiLaunch(t, op, "sh", "-c", `printf '\033[1;31mRED\033[0m \033[44m blue \033[0m ┌──┐ 日本 shot-me\n'; sleep 60`)
	apiWaitScreen(t, op, id, "shot-me")
	var snap tools.Snapshot
	apiOK(t, op, "terminal_snapshot", apiM{"terminal": id, "screenshot": true, "scrollback_lines": 10}, &snap)
	if snap.Image == "" || snap.Screenshot == nil || len(snap.Lines) == 0 {
		t.Fatalf("snapshot with screenshot: %+v", snap)
	}
	w, h := decodeShot(t, snap)
	f := snap.Screenshot
	if w != 80*8 || h != 24*17 || f.Width != w || f.Height != h || !f.SelfContained {
		t.Fatalf("screenshot %dx%d, facts %+v", w, h, f)
	}
	if !slices.Contains(f.FallbackCharacters, "日") || slices.Contains(f.FallbackCharacters, "─") {
		t.Fatalf("fallback characters %q: the CJK ones have no glyph, box drawing is drawn", f.FallbackCharacters)
	}
	if snap.Scrollback == nil {
		t.Fatalf("scrollback_lines with no history yet should give an empty list, got none")
	}
	// Scale and theme.
	var big tools.Snapshot
	apiOK(t, op, "terminal_snapshot", apiM{"terminal": id, "screenshot": true, "screenshot_scale": 2, "screenshot_theme": "light"}, &big)
	if w2, h2 := decodeShot(t, big); w2 != 2*w || h2 != 2*h {
		t.Fatalf("scale 2: %dx%d", w2, h2)
	}
	apiFail(t, op, "terminal_snapshot", apiM{"terminal": id, "screenshot": true, "screenshot_scale": 5}, tools.KindUsage)
	// Too large: refused with the reason and advice.
	apiMutate(t, op, "terminal_resize", apiM{"terminal": id, "columns": 1000, "rows": 1000})
	res := apiFail(t, op, "terminal_snapshot", apiM{"terminal": id, "screenshot": true, "screenshot_scale": 4}, tools.KindRejected)
	if res.Details["reason"] != "capacity" {
		t.Fatalf("too large: %s", apiRes(res))
	}
}
