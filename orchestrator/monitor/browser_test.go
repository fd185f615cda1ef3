package monitor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/browsertest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// TestPageShowsCrashAndDialogs: in Chromium, a crashed node shows its
// signal, run time, last input and screen tail; a question's answers are
// the `termsprawl answer … --selection` commands, shell-quoted; text from
// outside (a dialog's title) is text, never markup.
func TestPageShowsCrashAndDialogs(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "starts Chromium")
	b := browsertest.Start(t)
	e := newFakeEngine()
	e.add("a", "one", "two R")
	code := 139
	e.info = map[string]func(*tools.NodeInfo){"a": func(n *tools.NodeInfo) {
		n.Status, n.ExitCode = tools.StatusExited, &code
		n.Crash = &tools.Crash{Signal: "SIGSEGV", AfterMS: 1234, LastInput: &tools.InputSummary{Kind: "submit", Summary: "make"},
			ScreenTail: []string{"Segmentation fault (core dumped)"}}
		n.Recording = &tools.RecordingStatus{Path: "/state/traces/a-1", Since: "2026-12-01T10:00:00Z"}
	}}
	m, _ := serveMonitor(t, e)
	b.Do("open", browsertest.M{"url": m.URL()})
	b.Do("waitShown", browsertest.M{"node": "a"})
	for _, want := range []string{"statusexited (exit 139)", "ended bysignal SIGSEGV", "after1.2 s", "last inputsubmit: make",
		"Segmentation fault (core dumped)", "recording/state/traces/a-1 (since 2026-12-01T10:00:00Z)", "agent stateworking: tests"} {
		b.WaitText(0, "#details", want)
	}
	for _, want := range []string{"termsprawl answer dialog-2 allow --selection staging",
		`termsprawl answer dialog-2 allow --selection 'prod'\''s copy'`, "termsprawl answer dialog-2 deny",
		`<img src=x onerror="document.title='owned'">`} {
		b.WaitText(0, "#dialogs", want)
	}
	v := b.Do("eval", browsertest.M{"expr": "[document.querySelectorAll('#side img').length, document.title, document.querySelector('nav button .dot').className]"})["value"]
	if got := fmt.Sprint(v); got != "[0 termsprawl monitor dot st-dialog]" {
		t.Fatalf("markup from a dialog title ran, or the tab is wrong: %s", got)
	}
	rows := browsertest.Strings(b.Do("rows", nil)["rows"])
	if len(rows) != 3 || strings.TrimRight(rows[1], " ") != "two R" {
		t.Fatalf("rows %q", rows)
	}
	if st := b.Do("style", browsertest.M{"text": "R"}); st["color"] != "rgb(205, 49, 49)" {
		t.Fatalf("red cell: %v", st)
	}
	shot := filepath.Join(os.TempDir(), "termsprawl-monitor-crash-test.png")
	b.Do("screenshot", browsertest.M{"path": shot})
	t.Logf("screenshot: %s", shot)
}
