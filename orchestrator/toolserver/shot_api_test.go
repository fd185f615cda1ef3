package toolserver

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"testing"
)

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
