package toolserver

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/browsertest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// monitorURL asks session_info for the monitor's URL, as termsprawl
// monitor does.
func monitorURL(t testing.TB, op string) string {
	t.Helper()
	var info tools.SessionInfo
	apiOK(t, op, "session_info", nil, &info)
	if info.MonitorURL == "" {
		t.Fatal("session_info has no monitor_url for the operator")
	}
	return info.MonitorURL
}

// pageRowsMatch compares the page's rows with a snapshot's lines.
func pageRowsMatch(rows []string, snap tools.Snapshot) error {
	if len(rows) != snap.Rows {
		return fmt.Errorf("the page has %d rows, the terminal %d", len(rows), snap.Rows)
	}
	for y, r := range rows {
		want := ""
		if y < len(snap.Lines) {
			want = snap.Lines[y]
		}
		if got := strings.TrimRight(r, " "); got != want {
			return fmt.Errorf("row %d: page %q, terminal_snapshot %q", y, got, want)
		}
	}
	return nil
}

// TestMonitorInBrowser opens the monitor in a real headless Chromium and
// checks what a person sees: the screen text equals terminal_snapshot,
// later output appears without a reload, nodes come and go, colours are
// the terminal's, typing on the page reaches nothing, no request leaves
// 127.0.0.1, and the page reconnects after the orchestrator restarts.
func TestMonitorInBrowser(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "starts Chromium")
	b := browsertest.Start(t)
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	url := monitorURL(t, op)

	alpha := apiLaunch(t, op, "env", "PS1=$ ", "bash", "--norc", "--noprofile")
	apiOK(t, op, "terminal_submit", apiM{"terminal": alpha, "text": `printf '\033[31mRED\033[0m plain \033[1;4mBOLDUL\033[0m \033[38;5;208mORANGE\033[0m \033[48;2;0;80;160mBLUEBG\033[0m \033[3;9mITALSTRIKE\033[0m \033[7mINVERSE\033[0m 中文\n'`}, nil)
	apiWaitScreen(t, op, alpha, "INVERSE 中文")
	apiQuiet(t, op, alpha)
	got := filepath.Join(t.TempDir(), "got")
	sink := apiLaunch(t, op, "sh", "-c", "exec cat > "+got)
	apiQuiet(t, op, sink)

	b.Do("open", apiM{"url": url + "#node=" + alpha})
	b.Do("waitShown", apiM{"node": alpha})
	b.Do("eval", apiM{"expr": "window.__noReload = 42"})

	// The page's text is the terminal's.
	snap := apiSnapshot(t, op, alpha)
	rows := browsertest.Strings(b.Do("rows", nil)["rows"])
	if err := pageRowsMatch(rows, snap); err != nil {
		t.Fatal(err)
	}

	// Styles: computed colours are the screenshot palette's.
	for _, c := range []struct{ text, prop, want string }{
		{"RED", "color", "rgb(205, 49, 49)"},
		{"ORANGE", "color", "rgb(255, 135, 0)"},
		{"BLUEBG", "background", "rgb(0, 80, 160)"},
		{"BOLDUL", "weight", "700"},
		{"BOLDUL", "decoration", "underline"},
		{"ITALSTRIKE", "fontStyle", "italic"},
		{"ITALSTRIKE", "decoration", "line-through"},
		{"INVERSE", "color", "rgb(30, 30, 30)"},
		{"INVERSE", "background", "rgb(212, 212, 212)"},
	} {
		st := b.Do("style", apiM{"text": c.text})
		if st["found"] != true || fmt.Sprint(st[c.prop]) != c.want {
			t.Errorf("%s: %s = %v, want %s (%v)", c.text, c.prop, st[c.prop], c.want, st)
		}
	}

	// A wide character takes exactly two cells, whatever its glyph.
	ww := b.Do("eval", apiM{"expr": `(() => {
		const spans = [...document.querySelectorAll('#screen .row span')];
		const w = (t) => spans.find((s) => s.textContent === t).getBoundingClientRect().width;
		return [w('中'), w('RED') / 3];
	})()`})["value"].([]any)
	if wide, cell := ww[0].(float64), ww[1].(float64); cell <= 0 || wide < 1.95*cell || wide > 2.05*cell {
		t.Errorf("a wide character is %.2f px wide, a cell %.2f px: want two cells", wide, cell)
	}

	// Scaled to fit, never enlarged: 80×24 fits at its real size; a
	// 230×70 screen is scaled down until it fits the view.
	if k := b.Do("eval", apiM{"expr": "document.getElementById('fit').dataset.scale"})["value"]; fmt.Sprint(k) != "1" {
		t.Errorf("an 80x24 screen in a 1400x900 page is scaled by %v, want 1 (real size)", k)
	}
	r, _ := apiMutate(t, op, "terminal_launch", apiM{"command": []string{"sh", "-c", "echo wide-node; exec sleep 600"}, "columns": 230, "rows": 70, "cwd": t.TempDir()})
	var wide tools.NodeInfo
	if err := json.Unmarshal(r.Result, &wide); err != nil {
		t.Fatal(err)
	}
	b.Do("waitTabs", apiM{"present": []string{wide.Terminal}})
	b.Do("select", apiM{"node": wide.Terminal})
	b.Do("waitRow", apiM{"text": "wide-node"})
	fits := b.Do("eval", apiM{"expr": `(() => {
		const v = document.getElementById('view').getBoundingClientRect();
		const s = document.getElementById('screen').getBoundingClientRect();
		return [Number(document.getElementById('fit').dataset.scale), s.right <= v.right + 1 && s.bottom <= v.bottom + 1];
	})()`})["value"].([]any)
	if k, ok := fits[0].(float64); !ok || k >= 1 || k <= 0.1 || fits[1] != true {
		t.Errorf("a 230x70 screen: scale %v, fits the view %v; want scaled below 1 and fitting", fits[0], fits[1])
	}
	b.Do("screenshot", apiM{"path": filepath.Join(os.TempDir(), "termsprawl-monitor-test-wide.png")})
	apiMutate(t, op, "terminal_close", apiM{"terminal": wide.Terminal})
	b.Do("waitTabs", apiM{"absent": []string{wide.Terminal}})
	b.Do("select", apiM{"node": alpha})

	// A line printed afterwards appears without a reload.
	apiOK(t, op, "terminal_submit", apiM{"terminal": alpha, "text": "echo LATE-$((6*7))"}, nil)
	ms := b.Do("waitRow", apiM{"text": "LATE-42", "timeout": 10000})["ms"]
	t.Logf("a printed line reached the page %v ms after terminal_submit returned", ms)
	apiQuiet(t, op, alpha)
	b.Do("waitRow", apiM{"text": "$ ", "timeout": 10000})
	// The page follows to the same state as the terminal.
	pageFollows := func(what string) {
		t.Helper()
		var err error
		if !testenv.Until(10*time.Second, func() bool {
			err = pageRowsMatch(browsertest.Strings(b.Do("rows", nil)["rows"]), apiSnapshot(t, op, alpha))
			return err == nil
		}) {
			t.Fatalf("%s: %v", what, err)
		}
	}
	pageFollows("after a line")
	// A screen that scrolls a line at a time is sent as scrolls and new
	// rows (monitor.scrollOf); the page moves its rows and ends equal.
	apiOK(t, op, "terminal_submit", apiM{"terminal": alpha, "text": `for i in $(seq 40); do echo "scroll-$i"; sleep 0.05; done`}, nil)
	b.Do("waitRow", apiM{"text": "scroll-40", "timeout": 15000})
	apiQuiet(t, op, alpha)
	pageFollows("after scrolling")
	if n := b.Do("eval", apiM{"expr": "Number(document.getElementById('screen').dataset.scrolls || 0)"})["value"]; fmt.Sprint(n) == "0" {
		t.Errorf("the page applied no scroll event while the screen scrolled a line at a time")
	}

	// A new node appears, a closed one goes, without a reload.
	beta := apiLaunch(t, op, "sh", "-c", "echo beta-here; exec sleep 600")
	b.Do("waitTabs", apiM{"present": []string{alpha, sink, beta}})
	b.Do("select", apiM{"node": beta})
	b.Do("waitRow", apiM{"text": "beta-here"})
	apiMutate(t, op, "terminal_close", apiM{"terminal": beta})
	b.Do("waitTabs", apiM{"absent": []string{beta}})
	b.Do("waitShown", apiM{"node": alpha}) // the page moves to another node

	// An exited node stays, with its exit code.
	r, _ = apiMutate(t, op, "terminal_launch", apiM{"command": []string{"sh", "-c", "echo bye; exit 3"}, "columns": 80, "rows": 24, "cwd": t.TempDir()})
	var gone tools.NodeInfo
	if err := json.Unmarshal(r.Result, &gone); err != nil {
		t.Fatal(err)
	}
	b.Do("waitTabs", apiM{"present": []string{gone.Terminal}})
	b.Do("select", apiM{"node": gone.Terminal})
	b.Do("eval", apiM{"expr": "new Promise((ok, no) => { const end = Date.now() + 10000; const t = () => document.getElementById('details').textContent.includes('statusexited (exit 3)') ? ok(1) : Date.now() > end ? no(new Error('exit not shown: ' + document.getElementById('details').textContent)) : setTimeout(t, 20); t(); })"})
	if cls := b.Do("eval", apiM{"expr": fmt.Sprintf("document.querySelector('nav button[data-node=%q] .dot').className", gone.Terminal)})["value"]; !strings.Contains(fmt.Sprint(cls), "st-exited") && !strings.Contains(fmt.Sprint(cls), "st-crashed") {
		t.Errorf("an exited node's tab dot is %v", cls)
	}
	apiMutate(t, op, "terminal_close", apiM{"terminal": gone.Terminal})

	// Typing on the page reaches nothing: the sink's revision stays and
	// its program receives no byte; the page sends no request but GETs.
	b.Do("select", apiM{"node": sink})
	before := apiSnapshot(t, op, sink)
	b.Do("type", apiM{"text": "typed-on-the-page"})
	b.Do("paste", apiM{"text": "pasted-on-the-page"})
	b.Do("select", apiM{"node": alpha})
	b.Do("select", apiM{"node": sink}) // a full round trip after the typing
	after := apiSnapshot(t, op, sink)
	if after.Revision != before.Revision || strings.Contains(strings.Join(after.Lines, "\n"), "typed") {
		t.Fatalf("typing on the page changed the node: revision %d → %d, screen %q", before.Revision, after.Revision, after.Lines)
	}
	if data, err := os.ReadFile(got); err != nil || len(data) != 0 {
		t.Fatalf("the node's program received %q (%v)", data, err)
	}

	// Agent state, a pending dialog with the commands that answer it, and
	// a watch: shown, and gone from the page once answered.
	asAlpha := s.session(alpha)
	apiOK(t, asAlpha, "agent_report", apiM{"state": tools.AgentWaiting, "message": "needs a yes"}, nil)
	asked := make(chan tools.Result, 1)
	go func() {
		asked <- apiCall(t, asAlpha, "dialog_request", apiM{"kind": "permission", "title": "Run make deploy?", "timeout_ms": 40000})
	}()
	rec, _ := apiMutate(t, op, "terminal_record", apiM{"terminal": alpha, "on": true})
	var recorded tools.RecordResult
	if err := json.Unmarshal(rec.Result, &recorded); err != nil || recorded.Path == "" {
		t.Fatalf("terminal_record: %s %v", rec.Result, err)
	}
	var ws tools.WatchStarted
	apiOK(t, op, "watch_start", apiM{"terminal": alpha, "wait": "text", "text": "DEPLOYED"}, &ws)
	b.Do("select", apiM{"node": alpha})
	side := `document.getElementById('side').textContent`
	for _, want := range []string{"waiting: needs a yes", "recording" + recorded.Path, "Run make deploy?", "termsprawl answer dialog-1 allow", "termsprawl answer dialog-1 deny",
		ws.Watch + ": operator waits on " + alpha + ` for text "DEPLOYED"`} {
		b.Do("eval", apiM{"expr": fmt.Sprintf("new Promise((ok, no) => { const end = Date.now() + 10000; const t = () => %s.includes(%q) ? ok(1) : Date.now() > end ? no(new Error('not shown: ' + %s)) : setTimeout(t, 20); t(); })", side, want, side)})
	}
	shot := filepath.Join(os.TempDir(), "termsprawl-monitor-test.png")
	b.Do("screenshot", apiM{"path": shot})
	t.Logf("screenshot: %s", shot)
	apiMutate(t, op, "dialog_answer", apiM{"dialog": "dialog-1", "mode": "deny"})
	if res := <-asked; !res.OK {
		t.Fatalf("dialog_request: %s", apiRes(res))
	}
	apiMutate(t, op, "terminal_record", apiM{"terminal": alpha, "on": false})
	b.Do("eval", apiM{"expr": fmt.Sprintf("new Promise((ok, no) => { const end = Date.now() + 10000; const t = () => !%s.includes('dialog-1') ? ok(1) : Date.now() > end ? no(new Error('answered dialog still shown')) : setTimeout(t, 20); t(); })", side)})

	// The orchestrator restarts: the page reconnects by itself, at the same
	// URL, and shows the adopted node.
	s.stop()
	b.Do("eval", apiM{"expr": "new Promise(r => { const t = () => document.getElementById('conn').className.includes('reconnecting') ? r(1) : setTimeout(t, 20); t(); })"})
	s2 := apiStart(t, tmux, dir)
	if u2 := monitorURL(t, s2.op()); u2 != url {
		t.Fatalf("the monitor's URL changed across a restart: %s → %s", url, u2)
	}
	b.Do("eval", apiM{"expr": "new Promise(r => { const t = () => document.getElementById('conn').className.includes('live') ? r(1) : setTimeout(t, 20); t(); })"})
	b.Do("waitShown", apiM{"node": alpha})
	apiOK(t, s2.op(), "terminal_submit", apiM{"terminal": alpha, "text": "echo AFTER-$((7*7))"}, nil)
	b.Do("waitRow", apiM{"text": "AFTER-49", "timeout": 10000})
	if v := b.Do("eval", apiM{"expr": "window.__noReload"})["value"]; fmt.Sprint(v) != "42" {
		t.Fatalf("the page was reloaded (marker %v)", v)
	}

	// No request left 127.0.0.1, and every one was a GET of the monitor.
	log := b.Do("requests", nil)
	prefix := strings.TrimSuffix(url, "/")
	for _, r := range browsertest.Strings(log["requests"]) {
		method, u, _ := strings.Cut(r, " ")
		if method != "GET" || !strings.HasPrefix(u, prefix+"/") {
			t.Errorf("the page made a request other than a GET of the monitor: %s", r)
		}
	}
	for _, c := range browsertest.Strings(log["console"]) {
		if strings.HasPrefix(c, "pageerror") || strings.Contains(c, "Content Security Policy") {
			t.Errorf("page console: %s", c)
		}
	}
}
