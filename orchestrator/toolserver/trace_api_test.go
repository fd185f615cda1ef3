package toolserver

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// Recording and the trace tools through the API, with the bad inputs of
// CONTRACT §13: a path that is not a trace, a relative path, time_ms and
// marker both, a marker that does not exist, time_ms past the end, a
// ninth open trace, a trace id that is not open.
func TestRecordAndTracesThroughAPI(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	var info tools.ReceiptOf[tools.NodeInfo]
	_, raw := apiMutate(t, op, "terminal_launch", apiM{"command": []string{"bash", "--norc", "--noprofile", "-i"}, "name": "rec", "record": true})
	if err := tools.DecodeValue(raw, &info); err != nil {
		t.Fatal(err)
	}
	id := info.Result.Terminal
	if info.Result.Recording == nil {
		t.Fatalf("launch {record:true}: no recording in %+v", info.Result)
	}
	apiMutate(t, op, "terminal_submit", apiM{"terminal": id, "text": "echo traced-$((7*6))", "wait": apiM{"wait": "text", "text": "traced-42", "timeout_ms": 20000}})
	var mark tools.ReceiptOf[tools.MarkResult]
	_, raw = apiMutate(t, op, "terminal_mark", apiM{"terminal": id, "label": "after echo"})
	if err := tools.DecodeValue(raw, &mark); err != nil || mark.Result.Label != "after echo" {
		t.Fatalf("mark: %+v %v", mark, err)
	}
	var off tools.ReceiptOf[tools.RecordResult]
	_, raw = apiMutate(t, op, "terminal_record", apiM{"terminal": id, "on": false})
	if err := tools.DecodeValue(raw, &off); err != nil || off.Result.Recording || off.Result.Path != info.Result.Recording.Path {
		t.Fatalf("record off: %+v %v", off, err)
	}

	var opened tools.TraceOpened
	apiOK(t, op, "trace_open", apiM{"path": filepath.Base(off.Result.Path)}, &opened)
	if opened.Path != off.Result.Path || opened.Meta.Node != id {
		t.Fatalf("trace_open by name: %+v", opened)
	}
	var ov tools.TraceOverview
	apiOK(t, op, "trace_overview", apiM{"trace": opened.Trace}, &ov)
	if len(ov.Markers) != 1 || ov.Markers[0].Label != "after echo" {
		t.Fatalf("overview: %+v", ov)
	}
	var fr tools.TraceFrame
	apiOK(t, op, "trace_frame_at", apiM{"trace": opened.Trace, "marker": "after echo", "screenshot": true}, &fr)
	if !strings.Contains(strings.Join(fr.Lines, "\n"), "traced-42") || fr.Image == "" || fr.Screenshot == nil {
		t.Fatalf("frame at the marker: %+v", fr.Screen)
	}
	var ch tools.Changes
	apiOK(t, op, "trace_diff", apiM{"trace": opened.Trace, "from_ms": 0, "to_ms": fr.TimeMS}, &ch)
	if len(ch.Rows) == 0 {
		t.Fatalf("diff from the start to the marker is empty")
	}

	// Bad input.
	notTrace := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notTrace, []byte("hello\n"), 0o600)
	apiFail(t, op, "trace_open", apiM{"path": notTrace}, tools.KindUsage)
	apiFail(t, op, "trace_open", apiM{"path": "some/relative"}, tools.KindUsage)
	apiFail(t, op, "trace_open", apiM{"path": filepath.Join(t.TempDir(), "missing")}, tools.KindNotFound)
	apiFail(t, op, "trace_frame_at", apiM{"trace": opened.Trace, "time_ms": 0, "marker": "after echo"}, tools.KindUsage)
	res := apiCall(t, op, "trace_frame_at", apiM{"trace": opened.Trace, "marker": "no such marker"})
	if res.OK || !strings.Contains(res.Error, "no such marker") {
		t.Fatalf("a marker that does not exist: %+v", res)
	}
	res = apiCall(t, op, "trace_frame_at", apiM{"trace": opened.Trace, "time_ms": ov.DurationMS + 100000})
	if res.OK {
		t.Fatalf("time_ms past the end answered ok")
	}
	apiFail(t, op, "trace_overview", apiM{"trace": "trace-999"}, tools.KindNotFound)
	apiFail(t, op, "terminal_mark", apiM{"terminal": id, "label": "not recorded"}, tools.KindNotRun)

	// A ninth open trace closes the coldest and names it.
	castDir := t.TempDir()
	var last tools.TraceOpened
	for i := range 8 {
		p := filepath.Join(castDir, fmt.Sprintf("c%d.cast", i))
		os.WriteFile(p, fmt.Appendf(nil, "{\"version\":2,\"width\":20,\"height\":5}\n[0.5,\"o\",\"cast %d\"]\n", i), 0o600)
		apiOK(t, op, "trace_open", apiM{"path": p}, &last)
	}
	if last.Evicted != opened.Trace {
		t.Fatalf("the ninth trace evicted %q, want the coldest %q", last.Evicted, opened.Trace)
	}
	apiFail(t, op, "trace_overview", apiM{"trace": opened.Trace}, tools.KindNotFound)
}
