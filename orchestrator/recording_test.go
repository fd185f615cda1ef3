package orchestrator

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/tools"
)

// launchRecorded starts bash recorded from its start.
func launchRecorded(t *testing.T, o *Orchestrator) (id, dir string) {
	t.Helper()
	info, err := o.Launch(tctx(t), LaunchSpec{Command: bashArgv(), Name: "rec", Cwd: t.TempDir(), Columns: 80, Rows: 24, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	if info.Recording == nil || info.Recording.Path == "" {
		t.Fatalf("launch with record: NodeInfo.Recording = %+v", info.Recording)
	}
	return info.Terminal, info.Recording.Path
}

// readEvents reads events.jsonl.
func readEvents(t *testing.T, dir string) []record.Event {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, record.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []record.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e record.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("events.jsonl line %q: %v", sc.Text(), err)
		}
		evs = append(evs, e)
	}
	return evs
}

func eventTypes(evs []record.Event) map[string]int {
	m := map[string]int{}
	for _, e := range evs {
		m[e.Type]++
	}
	return m
}

// A recorded node: output, inputs by kind, a marker, a resize; the trace
// tools rebuild the screen at the marker; asciinema accepts the cast; a
// pasted secret is nowhere in the directory.
func TestRecordingEndToEnd(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id, dir := launchRecorded(t, o)
	if filepath.Dir(dir) != filepath.Join(o.cfg.StateDir, TracesDir) || !strings.HasPrefix(filepath.Base(dir), "rec-") {
		t.Fatalf("recording dir %s: want <state>/traces/rec-<time>", dir)
	}
	ctx := tctx(t)
	inputAndWait(t, o.Submit, id, "echo step-one-$((40+2))", &tools.WaitSpec{Wait: tools.WaitText, Text: "step-one-42", TimeoutMS: 20000})
	m, err := o.Mark(id, "after step one")
	if err != nil {
		t.Fatal(err)
	}
	// A password pasted into a prompt that does not echo: the recording
	// holds its size only.
	inputAndWait(t, o.Submit, id, `read -rsp "$(printf 'sec%s> ' ret)" SECRET; echo got-${#SECRET}-chars`, &tools.WaitSpec{Wait: tools.WaitText, Text: "secret> ", TimeoutMS: 20000})
	const secret = "hunter2-paste-secret-\u00e9"
	inputAndWait(t, o.Paste, id, secret+"\n", &tools.WaitSpec{Wait: tools.WaitRegex, Pattern: "got-2[23]-chars", TimeoutMS: 20000})
	if _, err := o.Press(ctx, id, "C-l", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Resize(ctx, id, 100, 30); err != nil {
		t.Fatal(err)
	}
	inputAndWait(t, o.Submit, id, "echo step-two-$((50+5))", &tools.WaitSpec{Wait: tools.WaitText, Text: "step-two-55", TimeoutMS: 20000})
	off, err := o.Record(ctx, id, false)
	if err != nil || off.Recording || off.Path != dir {
		t.Fatalf("record off: %+v %v", off, err)
	}
	if info := nodeInfo(t, o, id); info.Recording != nil {
		t.Fatalf("after off, NodeInfo.Recording = %+v", info.Recording)
	}

	// Nothing of the paste's text anywhere in the recording.
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte("hunter2")) {
			t.Errorf("%s holds the pasted text", p)
		}
		return nil
	})
	evs := readEvents(t, dir)
	types := eventTypes(evs)
	if types["start"] != 1 || types["marker"] != 1 || types["resize"] < 1 || types["input"] < 4 {
		t.Fatalf("events %v", types)
	}
	kinds := map[string]bool{}
	for _, e := range evs {
		if e.Type == "input" {
			kinds[e.Kind] = true
		}
	}
	for _, k := range []string{record.InputSubmit, record.InputPaste, record.InputPress} {
		if !kinds[k] {
			t.Errorf("no %s input event in %v", k, kinds)
		}
	}

	opened, err := o.TraceOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	if opened.Meta.Node != id || opened.Meta.End.IsZero() {
		t.Fatalf("trace meta %+v", opened.Meta)
	}
	ov, err := o.TraceOverview(opened.Trace)
	if err != nil {
		t.Fatal(err)
	}
	if len(ov.Markers) != 1 || ov.Markers[0].Label != "after step one" || ov.Markers[0].TMS != m.TMS {
		t.Fatalf("overview markers %+v, mark %+v", ov.Markers, m)
	}
	fr, err := o.TraceFrameAt(opened.Trace, FrameSpec{Marker: "after step one"})
	if err != nil {
		t.Fatal(err)
	}
	screen := strings.Join(fr.Lines, "\n")
	if !strings.Contains(screen, "step-one-42") || strings.Contains(screen, "step-two-55") {
		t.Fatalf("frame at the marker:\n%s", screen)
	}
	end, err := o.TraceFrameAt(opened.Trace, FrameSpec{Screenshot: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(end.Lines, "\n"), "step-two-55") || end.Columns != 100 || end.Rows != 30 || end.Image == "" {
		t.Fatalf("frame at the end: %dx%d image %d bytes\n%s", end.Columns, end.Rows, len(end.Image), strings.Join(end.Lines, "\n"))
	}
	d, err := o.TraceDiff(opened.Trace, fr.TimeMS, end.TimeMS)
	if err != nil || len(d.Rows) == 0 {
		t.Fatalf("diff: %+v %v", d, err)
	}
	if _, err := o.TraceFrameAt(opened.Trace, FrameSpec{Marker: "no such marker"}); !(tools.KindOf(err) == tools.KindNotFound) && !(tools.KindOf(err) == tools.KindUsage) {
		t.Fatalf("a marker that does not exist: %v", err)
	}
	late := ov.DurationMS + 60_000
	if _, err := o.TraceFrameAt(opened.Trace, FrameSpec{TimeMS: &late}); err == nil {
		t.Fatal("time_ms past the end: no error")
	}
	zero := int64(0)
	if _, err := o.TraceFrameAt(opened.Trace, FrameSpec{TimeMS: &zero, Marker: "after step one"}); !(tools.KindOf(err) == tools.KindUsage) {
		t.Fatalf("time_ms and marker: %v", err)
	}

	out, err := testenv.AsciinemaCat(t, filepath.Join(dir, record.CastFile))
	if err != nil || !strings.Contains(out, "step-two-55") {
		t.Fatalf("asciinema cat: %v\n%s", err, out)
	}
}

func nodeInfo(t *testing.T, o *Orchestrator, id string) tools.NodeInfo {
	t.Helper()
	for _, info := range o.List(tctx(t)) {
		if info.Terminal == id {
			return info
		}
	}
	t.Fatalf("node %s not listed", id)
	return tools.NodeInfo{}
}

// Recording gets every byte of a flood, also while the mirror skips the
// burst and reseeds from tmux instead of emulating it.
func TestRecordingGetsEveryByteOfABurst(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id, dir := launchRecorded(t, o)
	ctx := tctx(t)
	// 20000 numbered lines, about 600 KB: far past burstBytes.
	if _, err := o.Submit(ctx, id, `seq -f 'line-%06g-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' 1 20000; echo flood-$((1+1))-done`,
		&tools.WaitSpec{Wait: tools.WaitText, Text: "flood-2-done", TimeoutMS: 40000}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Record(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	tr, err := record.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var out strings.Builder
	for ev := range tr.Events() {
		if ev.Code == "o" {
			out.WriteString(ev.Data)
		}
	}
	text := out.String()
	pos := 0
	for k := 1; k <= 20000; k++ {
		at := strings.Index(text[pos:], fmt.Sprintf("line-%06d-", k))
		if at < 0 {
			t.Fatalf("the cast (%d bytes of output) lacks line %d of 20000 after the lines before it", len(text), k)
		}
		pos += at
	}
}

// A recording goes on across an orchestrator restart: a gap event, a
// resume, and the output after the restart.
func TestRecordingSurvivesRestart(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	state := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(state); err != nil {
		t.Fatal(err)
	}
	o := openOrchestrator(t, srv, state)
	id, dir := launchRecorded(t, o)
	inputAndWait(t, o.Submit, id, "echo before-$((6*7))", &tools.WaitSpec{Wait: tools.WaitText, Text: "before-42", TimeoutMS: 20000})
	o.Close()

	o2 := openOrchestrator(t, srv, state)
	info := nodeInfo(t, o2, id)
	if info.Recording == nil || info.Recording.Path != dir {
		t.Fatalf("after restart, recording = %+v, want %s", info.Recording, dir)
	}
	inputAndWait(t, o2.Submit, id, "echo after-$((6*8))", &tools.WaitSpec{Wait: tools.WaitText, Text: "after-48", TimeoutMS: 20000})
	if err := o2.CloseNode(tctx(t), id); err != nil {
		t.Fatal(err)
	}
	types := eventTypes(readEvents(t, dir))
	if types["gap"] != 1 || types["reseed"] < 2 {
		t.Fatalf("events after a restart: %v (want one gap and a resume frame)", types)
	}
	tr, err := record.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.Meta().Resumes != 1 {
		t.Fatalf("meta resumes %d", tr.Meta().Resumes)
	}
	s, _, err := tr.FrameAt(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Lines, "\n"); !strings.Contains(got, "before-42") || !strings.Contains(got, "after-48") {
		t.Fatalf("last frame:\n%s", got)
	}
}

// terminal_record on a running node starts with its current screen; a
// recorded node never sleeps; turning it on twice changes nothing.
func TestRecordOnRunningNodeAndNoSleep(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	state := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(state); err != nil {
		t.Fatal(err)
	}
	// Each sleep, and whether the node was recorded as it went to sleep
	// (under load an unrecorded node can sleep, wake and sleep again
	// before the recording starts: those sleeps are no failure).
	type sleep struct {
		id       string
		recorded bool
	}
	slept := make(chan sleep, 16)
	o := openOrchestratorWith(t, srv, state, func(c *Config) {
		c.IdleAfter = 200 * time.Millisecond
		c.hooks = &hooks{Hooks: node.Hooks{Sleeping: func(n *node.Node) { slept <- sleep{n.Meta.ID, n.Rec.Load() != nil} }}}
	})
	id := launch(t, o, bashArgv()...)
	inputAndWait(t, o.Submit, id, "echo already-$((2*21))", &tools.WaitSpec{Wait: tools.WaitText, Text: "already-42", TimeoutMS: 20000})
	// Let it fall asleep, then record: the recording wakes it.
	select {
	case <-slept:
	case <-time.After(20 * time.Second):
		t.Fatal("the unobserved node did not sleep")
	}
	on, err := o.Record(tctx(t), id, true)
	if err != nil || !on.Recording {
		t.Fatalf("record on: %+v %v", on, err)
	}
	again, err := o.Record(tctx(t), id, true)
	if err != nil || again.Path != on.Path {
		t.Fatalf("record on again: %+v %v (want the same recording %s)", again, err, on.Path)
	}
	// Recorded, it stays awake past several idle periods: a marker made
	// later still lands after the node printed, and no sleep is seen.
	// Once it has gone unobserved for three idle periods (an unrecorded
	// node would sleep), deciding keeps it awake, and it never slept.
	n := o.node(id)
	testenv.Eventually(t, 20*time.Second, func() bool {
		return time.Since(time.Unix(0, n.LastObserved.Load())) > 3*o.cfg.IdleAfter
	}, testenv.Msg("the node stayed observed"))
	if ok, _ := n.DecideSleep(o.cfg.IdleAfter); ok {
		t.Fatal("decideSleep put a recorded node to sleep")
	}
	for len(slept) > 0 {
		if s := <-slept; s.recorded {
			t.Fatalf("recorded node %s went to sleep", s.id)
		}
	}
	if _, err := o.Record(tctx(t), id, false); err != nil {
		t.Fatal(err)
	}
	tr, err := record.Open(on.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	s, _, err := tr.FrameAt(nil, "")
	if err != nil || !strings.Contains(strings.Join(s.Lines, "\n"), "already-42") {
		t.Fatalf("the first frame of a recording started late lacks the screen: %v\n%s", err, strings.Join(s.Lines, "\n"))
	}
}

// Marking a node that is not recorded is not_run, and says how to start.
func TestMarkWithoutRecording(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, bashArgv()...)
	_, err := o.Mark(id, "x")
	if !(tools.KindOf(err) == tools.KindNotRun) || !strings.Contains(err.Error(), "terminal_record") {
		t.Fatalf("mark without recording: %v", err)
	}
}

// A full disk stops the recording with a logged error; the node runs on
// and its metadata no longer names the recording.
func TestRecordingDiskFull(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root to mount a small tmpfs (mount -t tmpfs -o size=256k)")
	}
	o, _ := newTestOrchestrator(t)
	traces := filepath.Join(o.cfg.StateDir, TracesDir)
	if err := os.MkdirAll(traces, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", traces).CombinedOutput(); err != nil {
		testenv.SkipOrFail(t, "cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", traces).Run() })
	id, dir := launchRecorded(t, o)
	ctx := tctx(t)
	if _, err := o.Submit(ctx, id, "seq -f 'fill-%07g-yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy' 1 20000; echo fill-done-$((1+2))",
		&tools.WaitSpec{Wait: tools.WaitText, Text: "fill-done-3", TimeoutMS: 40000}); err != nil {
		t.Fatal(err)
	}
	n := o.node(id)
	testenv.Until(20*time.Second, func() bool { return n.Rec.Load() == nil })
	if n.Rec.Load() != nil {
		t.Fatal("the recording did not stop on a full disk")
	}
	// The node runs on.
	inputAndWait(t, o.Submit, id, "echo still-$((3*3))", &tools.WaitSpec{Wait: tools.WaitText, Text: "still-9", TimeoutMS: 20000})
	meta, err := statefile.ReadMeta(o.cfg.StateDir, id)
	if err != nil || meta.Recording != "" {
		t.Fatalf("metadata after the recording failed: %+v %v", meta, err)
	}
	if _, err := os.Stat(filepath.Join(dir, record.CastFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}

// inputAndWait sends an input with a wait and fails the test unless the
// wait matched.
func inputAndWait(t *testing.T, send func(context.Context, string, string, *tools.WaitSpec) (tools.InputResult, error), id, text string, w *tools.WaitSpec) {
	t.Helper()
	r, err := send(tctx(t), id, text, w)
	if err != nil {
		t.Fatal(err)
	}
	if r.Wait == nil || !r.Wait.Matched {
		t.Fatalf("input %q: the wait did not match: %+v", text, r.Wait)
	}
}
