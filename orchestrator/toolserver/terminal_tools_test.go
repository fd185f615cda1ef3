package toolserver

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

func mousecatArgv(t *testing.T, modes ...string) []string {
	t.Helper()
	py := testenv.LookPath(t, "python3", "apt-get install python3")
	_, file, _, _ := runtime.Caller(0)
	return append([]string{py, filepath.Join(filepath.Dir(file), "..", "testdata", "mousecat.py")}, modes...)
}

// termwright's tools over the real wire: every value matches its output
// schema (apiOK checks), mouse and raw input arrive, refusals have their
// kinds and reasons, logs come with capture_since, crashes with snapshots.
func TestAPITerminalTools(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	logDir := t.TempDir()
	logPath := filepath.Join(logDir, "app.log")
	os.WriteFile(logPath, nil, 0o600)

	r, _ := apiMutate(t, op, "terminal_launch", apiM{"command": mousecatArgv(t, "1000", "1006"), "cwd": logDir,
		"logs": []apiM{{"path": "app.log", "label": "app"}}})
	var info tools.NodeInfo
	json.Unmarshal(r.Result, &info)
	id := info.Terminal
	apiOK(t, op, "terminal_wait_for", apiM{"terminal": id, "wait": "text", "text": "READY", "after": 0}, nil)

	var caps tools.Capabilities
	apiOK(t, op, "terminal_capabilities", apiM{"terminal": id}, &caps)
	if caps.Mouse != (tools.MouseMode{Tracking: "normal", Encoding: "sgr"}) || caps.SemanticTree != "unavailable" ||
		caps.Recording || strings.Join(caps.Logs, ",") != "app" {
		t.Fatalf("capabilities %+v", caps)
	}

	var q tools.QueryResult
	apiOK(t, op, "terminal_query", apiM{"terminal": id, "pattern": `READY \d+`}, &q)
	if len(q.Matches) != 1 || q.Matches[0].Text != "READY 1000" {
		t.Fatalf("query %+v", q)
	}
	cr, _ := apiMutate(t, op, "terminal_click", apiM{"terminal": id, "ref": q.Matches[0].Ref, "button": "right",
		"wait": apiM{"wait": "text", "text": "IN 1b5b3c323b313b314d1b5b3c323b313b316d"}})
	var mr tools.MouseResult
	json.Unmarshal(cr.Result, &mr)
	if mr.Wait == nil || !mr.Wait.Matched || mr.At != (tools.Cell{}) || mr.Revision == 0 {
		t.Fatalf("click result %s", cr.Result)
	}

	// Raw bytes from base64, delivered verbatim.
	apiMutate(t, op, "terminal_write_raw", apiM{"terminal": id, "base64": base64.StdEncoding.EncodeToString([]byte{0xff, 0x1b, 'x'}),
		"wait": apiM{"wait": "text", "text": "IN ff1b78"}})
	res := apiFail(t, op, "terminal_write_raw", apiM{"terminal": id, "base64": "%%%"}, tools.KindUsage)
	if !strings.Contains(res.Error, "does not decode") {
		t.Fatalf("bad base64: %s", res.Error)
	}

	// Application log lines come with capture_since.
	cursor := mr.Revision
	f, _ := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("request handled\n")
	f.Close()
	var ch tools.Changes
	for range 200 {
		apiOK(t, op, "terminal_capture_since", apiM{"terminal": id, "cursor": cursor}, &ch)
		if len(ch.Logs) > 0 {
			break
		}
		apiCall(t, op, "terminal_wait_for", apiM{"terminal": id, "wait": "render", "timeout_ms": 50}) // a bounded pause: log lines wake no waiter over the wire
	}
	if len(ch.Logs) != 1 || ch.Logs[0].Label != "app" || ch.Logs[0].Line != "request handled" {
		t.Fatalf("capture %+v", ch)
	}

	// Tracking off: not_run, input-mode-disabled.
	plain := apiLaunch(t, op, mousecatArgv(t)...)
	apiOK(t, op, "terminal_wait_for", apiM{"terminal": plain, "wait": "text", "text": "READY", "after": 0}, nil)
	res = apiFail(t, op, "terminal_wheel", apiM{"terminal": plain, "at": apiM{"row": 0, "column": 0}, "delta_y": 1}, tools.KindNotRun)
	if res.Details["reason"] != "input-mode-disabled" {
		t.Fatalf("details %v", res.Details)
	}
	apiFail(t, op, "terminal_click", apiM{"terminal": plain, "at": apiM{"row": 0, "column": 0}, "ref": "screen:0,0,1@1"}, tools.KindUsage)

	// A crash shows in the snapshot and in the next failing call.
	dead := apiLaunch(t, op, "sh", "-c", "echo dying; exit 9")
	apiOK(t, op, "terminal_wait_for", apiM{"terminal": dead, "wait": "exit"}, nil)
	snap := apiSnapshot(t, op, dead)
	if snap.Crash == nil || snap.Crash.ExitCode == nil || *snap.Crash.ExitCode != 9 {
		t.Fatalf("snapshot crash %+v", snap.Crash)
	}
	res = apiFail(t, op, "terminal_write_raw", apiM{"terminal": dead, "text": "x"}, tools.KindNotRun)
	if res.Details["crash"] == nil {
		t.Fatalf("no crash in the details: %v", res.Details)
	}
}
