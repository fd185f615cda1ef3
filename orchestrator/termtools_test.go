package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// terminal_query on a live node: positions, nth, no match, revision.
func TestQueryLive(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, "sh", "-c", "printf 'alpha beta\\nbeta gamma beta\\n'; sleep 60")
	waitText(t, o, id, "gamma")
	q, err := o.Query(context.Background(), id, QuerySpec{Text: "beta"})
	if err != nil || len(q.Matches) != 3 {
		t.Fatalf("%+v %v", q, err)
	}
	if m := q.Matches[2]; m.Row != 1 || m.Column != 11 || m.Length != 4 {
		t.Fatalf("third match %+v", m)
	}
	q2, _ := o.Query(context.Background(), id, QuerySpec{Text: "beta", Nth: 2})
	if len(q2.Matches) != 1 || q2.Matches[0] != q.Matches[1] {
		t.Fatalf("nth 2: %+v", q2)
	}
	q3, _ := o.Query(context.Background(), id, QuerySpec{Pattern: "^nothing$"})
	if q3.Matches == nil || len(q3.Matches) != 0 || q3.Revision != q.Revision {
		t.Fatalf("no match: %+v", q3)
	}
	if b, _ := json.Marshal(q3); !strings.Contains(string(b), `"matches":[]`) {
		t.Fatalf("zero matches must be an empty list: %s", b)
	}
}

// write_raw delivers bytes verbatim: control bytes, escape sequences and
// bytes that are not UTF-8, with no newline added.
func TestWriteRaw(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launchMousecat(t, o)
	data := []byte{0x1b, '[', 'A', 0x03, 0xff, 0x00, ';', '\\', '\''}
	r, err := o.WriteRaw(tctx(t), id, data, nil)
	if err != nil || r.Bytes != len(data) {
		t.Fatalf("%+v %v", r, err)
	}
	if got := received(t, o, id); got != "1b5b4103ff003b5c27"+"5a" {
		t.Fatalf("delivered %s", got)
	}
	if _, err := o.WriteRaw(tctx(t), id, nil, nil); !isKind(err, tools.KindUsage) {
		t.Fatalf("empty write: %v", err)
	}
	// More than one send-keys chunk arrives whole and in order.
	big := []byte(strings.Repeat("0123456789", 300))
	if _, err := o.WriteRaw(tctx(t), id, big, nil); err != nil {
		t.Fatal(err)
	}
	if got := received(t, o, id); !strings.HasSuffix(got, hexOf(string(big))+"5a") {
		t.Fatalf("a 3000-byte write arrived as %d hex digits", len(got))
	}
}

func isKind(err error, k tools.Kind) bool {
	var te *tools.Error
	return errors.As(err, &te) && te.Kind == k
}

// A program that dies on its own leaves a crash report: code or signal,
// time since launch, the last input by kind (a paste only by its size),
// the screen's last lines; it is in the snapshot, the node's info, the
// capabilities and the details of the next call that fails.
func TestCrashReport(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	script := writeScript(t, "crash.sh", "#!/bin/sh\nfor i in $(seq 1 50); do echo line $i; done\necho 'a very long line' $(seq 1 300 | tr -d '\\n')\nread x\nexit 3\n")
	info, err := o.Launch(tctx(t), LaunchSpec{Command: []string{script}, Cwd: t.TempDir(), Columns: 700, Rows: 60})
	if err != nil {
		t.Fatal(err)
	}
	id := info.Terminal
	waitText(t, o, id, "very long")
	if _, err := o.Paste(tctx(t), id, "secret-token-123\n", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 20000}); err != nil {
		t.Fatal(err)
	}
	snap, err := o.Snapshot(context.Background(), id)
	if err != nil || snap.Crash == nil {
		t.Fatalf("snapshot without a crash: %+v %v", snap, err)
	}
	c := snap.Crash
	if c.ExitCode == nil || *c.ExitCode != 3 || c.Signal != "" || c.AfterMS <= 0 {
		t.Errorf("crash %+v", c)
	}
	if c.LastInput == nil || c.LastInput.Kind != "paste" || c.LastInput.Summary != "17 bytes" {
		t.Errorf("last input %+v", c.LastInput)
	}
	if b, _ := json.Marshal(c.LastInput); strings.Contains(string(b), "secret") {
		t.Fatalf("the last input holds pasted text: %s", b)
	}
	if len(c.ScreenTail) == 0 || len(c.ScreenTail) > 40 || !strings.Contains(strings.Join(c.ScreenTail, "\n"), "line 50") {
		t.Errorf("screen tail %q", c.ScreenTail)
	}
	longest := 0
	for _, l := range c.ScreenTail {
		longest = max(longest, len([]rune(l)))
	}
	if longest != 500 {
		t.Errorf("the longest tail line has %d chars, want the 700-column line cut at 500", longest)
	}
	if len(c.ScreenTail) != 40 {
		t.Errorf("%d tail lines, want the last 40", len(c.ScreenTail))
	}
	if info, _ := o.Info(tctx(t), id); info.Crash == nil {
		t.Error("terminal_list has no crash")
	}
	if caps, _ := o.Capabilities(context.Background(), id); caps.Crash == nil || caps.Status != tools.StatusExited {
		t.Errorf("capabilities %+v", caps)
	}
	_, err = o.Type(tctx(t), id, "hello", nil)
	var te *tools.Error
	if !errors.As(err, &te) || te.Kind != tools.KindNotRun || te.Details["crash"] == nil {
		t.Fatalf("the next input's error has no crash: %v", err)
	}
	_, err = o.Mouse(tctx(t), id, MouseSpec{Kind: "click", At: &tools.Cell{}}, nil)
	if !errors.As(err, &te) || te.Details["crash"] == nil {
		t.Fatalf("the next mouse call's error has no crash: %v", err)
	}
}

// A signal is reported by name; a clean exit and terminal_close leave no
// crash report.
func TestCrashSignalAndCleanExit(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, "sh", "-c", "echo up; kill -SEGV $$")
	if _, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 20000}); err != nil {
		t.Fatal(err)
	}
	snap, _ := o.Snapshot(context.Background(), id)
	if snap.Crash == nil || snap.Crash.Signal != "SIGSEGV" || snap.Crash.ExitCode != nil {
		t.Fatalf("crash %+v", snap.Crash)
	}
	clean := launch(t, o, "sh", "-c", "echo bye")
	if _, err := o.WaitFor(tctx(t), clean, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 20000}); err != nil {
		t.Fatal(err)
	}
	if snap, _ := o.Snapshot(context.Background(), clean); snap.Crash != nil {
		t.Fatalf("a clean exit has a crash report: %+v", snap.Crash)
	}
	if _, err := o.Type(tctx(t), clean, "x", nil); !isKind(err, tools.KindNotRun) {
		t.Fatalf("input into an exited node: %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A recorded node: mouse and raw inputs are events by kind and size, and
// the crash report goes into events.jsonl and meta.json.
func TestRecordedCrashAndInputs(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	info, err := o.Launch(tctx(t), LaunchSpec{Command: mousecat(t, "1000", "1006"), Cwd: t.TempDir(), Columns: 80, Rows: 24, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	id, dir := info.Terminal, info.Recording.Path
	waitText(t, o, id, "READY")
	if _, err := o.Mouse(tctx(t), id, MouseSpec{Kind: "click", At: &tools.Cell{Row: 1, Column: 1}}, nil); err != nil {
		t.Fatal(err)
	}
	received(t, o, id) // a raw write, and the click's echo
	// mousecat dies by a signal (terminal_signal TERM).
	if _, err := o.Signal(id, "TERM"); err != nil {
		t.Fatal(err)
	}
	if _, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 20000}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Record(tctx(t), id, false); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	var crash *tools.Crash
	for _, e := range readEvents(t, dir) {
		if e.Type == "input" {
			kinds[e.Kind]++
		}
		if e.Type == "crash" {
			crash = e.Crash
		}
	}
	if kinds["mouse"] != 1 || kinds["raw"] != 1 {
		t.Errorf("input events %v", kinds)
	}
	if crash == nil || crash.Signal != "SIGTERM" || crash.LastInput == nil || crash.LastInput.Kind != "raw" {
		t.Fatalf("crash event %+v", crash)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil || !strings.Contains(string(raw), `"signal": "SIGTERM"`) && !strings.Contains(string(raw), `"signal":"SIGTERM"`) {
		t.Fatalf("meta.json %s %v", raw, err)
	}
}
