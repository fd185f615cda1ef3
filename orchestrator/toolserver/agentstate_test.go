package toolserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// fakeTUI is an agent's TUI in miniature: a prompt; "busy" shows a
// spinner with Claude Code's busy marker for a few seconds, then says it
// was interrupted and shows the prompt again (a turn that ends without an
// end hook).
const fakeTUI = `printf '> '; while IFS= read -r l; do case $l in busy) i=0; while [ $i -lt 12 ]; do printf '\r* Thinking %s (esc to interrupt)' $i; i=$((i+1)); sleep 0.25; done; printf '\r\033[K  Interrupted by user\n> ';; *) printf '> ';; esac; done`

// hookRecv is a webhook receiver that keeps every POST.
type hookRecv struct {
	mu     sync.Mutex
	posts  []map[string]any
	status int
	hang   chan struct{}
}

func newHookRecv(t testing.TB, status int) (*hookRecv, *httptest.Server) {
	r := &hookRecv{status: status}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		r.mu.Lock()
		r.posts = append(r.posts, m)
		hang := r.hang
		r.mu.Unlock()
		if hang != nil {
			select {
			case <-hang:
			case <-req.Context().Done():
			}
		}
		w.WriteHeader(r.status)
	}))
	t.Cleanup(srv.Close)
	return r, srv
}

// events counts the posts per node and event.
func (r *hookRecv) events() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, p := range r.posts {
		out[p["node"].(string)+"/"+p["event"].(string)]++
	}
	return out
}

func (r *hookRecv) find(node, event string) map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.posts {
		if p["node"] == node && p["event"] == event {
			return p
		}
	}
	return nil
}

// waitFor polls f (a cheap read of the tool server) until it holds.
func waitFor(t *testing.T, within time.Duration, what string, f func() bool) {
	t.Helper()
	if !testenv.Until(within, func() bool { return f() }) {
		t.Fatalf("not within %v: %s", within, what)
	}
}

func agentInfo(t *testing.T, sess, node string) tools.AgentInfo {
	t.Helper()
	var l tools.AgentList
	apiOK(t, sess, "agent_status", apiM{"node": node, "explain": true}, &l)
	if len(l.Agents) != 1 {
		t.Fatalf("agent_status of %s: %+v", node, l)
	}
	return l.Agents[0]
}

// Every source of evidence moves the state as CONTRACT §20 says, each
// change has its evidence in why (newest first), unknown hook events
// change nothing, an exited program stays exited, and the webhook gets
// one POST per node and event with every field.
func TestAgentStateEvidence(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 9 s on a loaded 2-core machine")
	t.Parallel()
	tmux, dir := apiNewState(t)
	recv, hook := newHookRecv(t, 200)
	s := apiStartWith(t, tmux, dir, orchestrator.Config{Notify: []string{"webhook=" + hook.URL}, NotifyMode: "all"})
	op := s.op()
	r, _ := apiMutate(t, op, "agent_launch", apiM{"agent": "custom", "command": []string{"sh", "-c", fakeTUI}, "name": "fake"})
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil {
		t.Fatal(err)
	}
	node, ag := info.Terminal, s.session(info.Terminal)
	st := agentInfo(t, op, node)
	if st.State != tools.AgentStarting || st.Since == "" || st.NeedsHuman || len(st.Why) != 1 || st.Why[0].Source != tools.SourceProcess {
		t.Fatalf("after launch: %+v", st)
	}
	if _, err := time.Parse(time.RFC3339, st.Since); err != nil {
		t.Fatalf("since %q: %v", st.Since, err)
	}
	var rep tools.AgentReport
	apiOK(t, ag, "agent_report", apiM{"event": "SessionStart"}, &rep)
	if rep.State != tools.AgentIdle {
		t.Fatalf("SessionStart: %+v", rep)
	}
	apiOK(t, ag, "agent_report", apiM{"event": "NoSuchEvent", "message": "x"}, &rep)
	if st = agentInfo(t, op, node); rep.State != tools.AgentIdle || st.State != tools.AgentIdle || st.Why[0].Event != "SessionStart" {
		t.Fatalf("an unknown event changed something: %+v %+v", rep, st)
	}

	// A turn that ends without its end hook: seen from the screen.
	apiOK(t, op, "terminal_submit", apiM{"terminal": node, "text": "busy", "wait": apiM{"wait": "text", "text": "esc to interrupt"}}, nil)
	apiOK(t, ag, "agent_report", apiM{"event": "UserPromptSubmit", "message": "prompt: busy"}, nil)
	if st = agentInfo(t, op, node); st.State != tools.AgentWorking {
		t.Fatalf("after UserPromptSubmit: %+v", st)
	}
	waitFor(t, 20*time.Second, "the interrupted turn seen to end", func() bool { return agentInfo(t, op, node).State == tools.AgentIdle })
	st = agentInfo(t, op, node)
	if w := st.Why[0]; w.Source != tools.SourceScreen || w.Event != "turn_ended" || !strings.Contains(st.Message, "without its end hook") {
		t.Fatalf("idle from the screen: %+v", st)
	}
	if scr := apiScreen(t, op, node); !strings.Contains(scr, "Interrupted") {
		t.Fatalf("judged idle before the turn ended:\n%s", scr)
	}

	// A permission dialog: waiting, needs a human; answered: working.
	apiOK(t, ag, "agent_report", apiM{"event": "UserPromptSubmit"}, nil)
	res := apiCall(t, ag, "dialog_request", apiM{"kind": "permission", "title": "Bash: rm -rf build", "wait_ms": 1})
	dlg, _ := res.Details["dialog"].(string)
	if res.OK || dlg == "" {
		t.Fatalf("dialog_request: %+v", res)
	}
	st = agentInfo(t, op, node)
	if st.State != tools.AgentWaiting || !st.NeedsHuman || st.Why[0].Source != tools.SourceDialog || st.Why[0].Event != "opened" {
		t.Fatalf("while the dialog is open: %+v", st)
	}
	var l tools.NodeList
	apiOK(t, op, "terminal_list", nil, &l)
	for _, n := range l.Terminals {
		if n.Terminal == node && (n.State != tools.AgentWaiting || !n.NeedsHuman || n.Since != st.Since) {
			t.Fatalf("terminal_list row %+v", n)
		}
	}
	apiMutate(t, op, "dialog_answer", apiM{"dialog": dlg, "mode": "allow"})
	if st = agentInfo(t, op, node); st.State != tools.AgentWorking || st.NeedsHuman || st.Why[0].Event != "answered" {
		t.Fatalf("after the answer: %+v", st)
	}
	// A second dialog within 30 s: no second needs_human POST.
	res = apiCall(t, ag, "dialog_request", apiM{"kind": "permission", "title": "Bash: ls", "wait_ms": 1})
	dlg2, _ := res.Details["dialog"].(string)
	apiMutate(t, op, "dialog_answer", apiM{"dialog": dlg2, "mode": "deny"})

	// Claude Code's StopFailure: error.
	apiOK(t, ag, "agent_report", apiM{"event": "StopFailure", "message": "API Error: 500"}, nil)
	if st = agentInfo(t, op, node); st.State != tools.AgentError || st.Why[0].Event != "StopFailure" {
		t.Fatalf("after StopFailure: %+v", st)
	}

	// The program killed: exited, whatever comes after.
	apiOK(t, ag, "agent_report", apiM{"event": "UserPromptSubmit"}, nil)
	apiMutate(t, op, "terminal_signal", apiM{"terminal": node, "signal": "KILL"})
	waitFor(t, 10*time.Second, "exited", func() bool { return agentInfo(t, op, node).State == tools.AgentExited })
	apiCall(t, ag, "agent_report", apiM{"event": "UserPromptSubmit"})
	apiCall(t, ag, "agent_report", apiM{"state": "working"})
	if st = agentInfo(t, op, node); st.State != tools.AgentExited || st.Why[0].Source == tools.SourceProcess && st.Why[0].Event == "launched" {
		t.Fatalf("after the kill: %+v", st)
	}
	found := false
	for _, w := range st.Why {
		if w.Source == tools.SourceProcess && (w.Event == "exited" || w.Event == "crashed") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no process evidence: %+v", st.Why)
	}
	for i := 1; i < len(st.Why); i++ {
		if st.Why[i].At > st.Why[i-1].At {
			t.Fatalf("why is not newest first: %+v", st.Why)
		}
	}

	// The webhook: one POST per node and event, every field.
	waitFor(t, 10*time.Second, "the webhook posts", func() bool {
		ev := recv.events()
		return ev[node+"/needs_human"] >= 1 && ev[node+"/error"] >= 1 && ev[node+"/exited"]+ev[node+"/crash"] >= 1
	})
	// A barrier: another agent's exit is notified after anything queued
	// before it (one sender, in order), so a duplicate of the events
	// above would have been posted by the time it is.
	r, _ = apiMutate(t, op, "agent_launch", apiM{"agent": "custom", "command": []string{"sh", "-c", "exit 3"}, "name": "barrier"})
	var barrier tools.NodeInfo
	if err := json.Unmarshal(r.Result, &barrier); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the barrier's exit POST", func() bool {
		ev := recv.events()
		return ev[barrier.Terminal+"/exited"]+ev[barrier.Terminal+"/crash"]+ev[barrier.Terminal+"/error"] >= 1
	})
	for k, n := range recv.events() {
		if !strings.HasPrefix(k, node+"/") {
			continue
		}
		if n != 1 {
			t.Errorf("%d POSTs for %s, want 1", n, k)
		}
	}
	p := recv.find(node, "needs_human")
	for _, k := range []string{"node", "name", "kind", "event", "state", "title", "text", "answer", "at"} {
		if _, ok := p[k]; !ok {
			t.Errorf("POST has no %q: %v", k, p)
		}
	}
	if p["name"] != "fake" || p["kind"] != "custom" || p["state"] != "waiting" || !strings.Contains(p["answer"].(string), dlg) || !strings.Contains(p["text"].(string), "rm -rf build") {
		t.Errorf("needs_human POST %v", p)
	}
}

// A notify.json termsprawl cannot read stops up with the file and line;
// so does a webhook URL that is not http(s).
func TestNotifyConfigRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file  string
		flags []string
		want  string
	}{
		{"{\n  \"targets\": [\n    \"pager\"\n  ]\n}\n", nil, "notify.json:3: unknown notification target \"pager\""},
		{"{\n  \"targets\": [\"tmux\"\n}\n", nil, "notify.json:3:"},
		{"", []string{"webhook=ftp://example.com"}, "--notify: webhook URL"},
	} {
		tmux, dir := apiNewState(t)
		if err := tools.EnsureStateDir(dir); err != nil {
			t.Fatal(err)
		}
		if c.file != "" {
			if err := os.WriteFile(filepath.Join(dir, "notify.json"), []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		err := Serve(t.Context(), orchestrator.Config{StateDir: dir, Socket: tmux.Socket, Version: "test", Notify: c.flags}, func(ServeInfo) {
			t.Error("served with a bad notification configuration")
		})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %v: %v, want %q", c.file, c.flags, err, c.want)
		}
	}
}

// Quiet mode: a crash sends nothing; needs-a-human still does. The
// sender is first in, first out, so the needs_human POST arriving alone
// proves no crash POST was queued before it.
func TestNotifyQuietModeNoCrash(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 5 s on a loaded 2-core machine")
	t.Parallel()
	tmux, dir := apiNewState(t)
	recv, hook := newHookRecv(t, 200)
	s := apiStartWith(t, tmux, dir, orchestrator.Config{Notify: []string{"webhook=" + hook.URL}, NotifyMode: "quiet"})
	op := s.op()
	launch := func(cmd ...string) string {
		r, _ := apiMutate(t, op, "agent_launch", apiM{"agent": "custom", "command": cmd})
		var info tools.NodeInfo
		if err := json.Unmarshal(r.Result, &info); err != nil {
			t.Fatal(err)
		}
		return info.Terminal
	}
	crasher := launch("sh", "-c", "read x; exit 3")
	asker := launch("cat")
	apiOK(t, op, "terminal_submit", apiM{"terminal": crasher, "text": "go"}, nil)
	waitFor(t, 10*time.Second, "the crash", func() bool { return agentInfo(t, op, crasher).State == tools.AgentExited })
	if w := agentInfo(t, op, crasher).Why[0]; w.Event != "crashed" || !strings.Contains(w.Detail, "code 3") {
		t.Fatalf("crash evidence %+v", w)
	}
	apiCall(t, s.session(asker), "dialog_request", apiM{"kind": "permission", "title": "Bash: ls", "wait_ms": 1})
	waitFor(t, 10*time.Second, "the needs_human POST", func() bool { return recv.events()[asker+"/needs_human"] == 1 })
	if ev := recv.events(); len(ev) != 1 {
		t.Fatalf("quiet mode sent %v", ev)
	}
}

// The state and its evidence survive a restart of termsprawl, and the
// restarted one watches the agent's program again: killed, it is exited.
func TestAgentStateAcrossRestart(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	r, _ := apiMutate(t, s.op(), "agent_launch", apiM{"agent": "custom", "command": []string{"cat"}})
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil {
		t.Fatal(err)
	}
	node := info.Terminal
	apiOK(t, s.session(node), "agent_report", apiM{"event": "UserPromptSubmit", "message": "prompt: build"}, nil)
	before := agentInfo(t, s.op(), node)
	s.stop()

	s = apiStart(t, tmux, dir)
	after := agentInfo(t, s.op(), node)
	if after.State != tools.AgentWorking || after.Since != before.Since || len(after.Why) != len(before.Why) {
		t.Fatalf("after the restart %+v, before %+v", after, before)
	}
	apiMutate(t, s.op(), "terminal_signal", apiM{"terminal": node, "signal": "KILL"})
	waitFor(t, 10*time.Second, "exited after the restart", func() bool {
		a := agentInfo(t, s.op(), node)
		return a.State == tools.AgentExited && a.Why[0].Source == tools.SourceProcess
	})
}

// Claude Code's idle-prompt notification ("Claude is waiting for your
// input", about 60 s after a turn, no dialog open), which the hook
// reports as IdleNotification, leaves an idle agent idle: no human is
// needed (issue 39; CONTRACT §20).
func TestIdleNotificationStaysIdle(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	r, _ := apiMutate(t, s.op(), "agent_launch", apiM{"agent": "custom", "command": []string{"cat"}})
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil {
		t.Fatal(err)
	}
	node := info.Terminal
	apiOK(t, s.session(node), "agent_report", apiM{"event": "Stop"}, nil)
	apiOK(t, s.session(node), "agent_report", apiM{"event": "IdleNotification", "state": "idle", "message": "Claude is waiting for your input"}, nil)
	if a := agentInfo(t, s.op(), node); a.State != tools.AgentIdle || a.NeedsHuman {
		t.Fatalf("after the idle notification: %+v, want idle without needs_human", a)
	}
	// A permission notification still needs a human.
	apiOK(t, s.session(node), "agent_report", apiM{"event": "Notification", "message": "Claude needs your permission to use Bash"}, nil)
	if a := agentInfo(t, s.op(), node); a.State != tools.AgentWaiting || !a.NeedsHuman {
		t.Fatalf("after a permission notification: %+v, want waiting", a)
	}
}

// Right after its launch an agent is starting (CONTRACT §20), and every
// terminal_list item carries needs_human, false included.
func TestListStartingAndNeedsHumanAlways(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	shell := apiLaunch(t, op, "cat")
	r, _ := apiMutate(t, op, "agent_launch", apiM{"agent": "custom", "command": []string{"cat"}})
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Terminals []map[string]any `json:"terminals"`
	}
	apiOK(t, op, "terminal_list", nil, &raw)
	seen := 0
	for _, row := range raw.Terminals {
		nh, ok := row["needs_human"].(bool)
		if !ok || nh {
			t.Errorf("terminal_list item %v: needs_human %v, want false and present", row["terminal"], row["needs_human"])
		}
		switch row["terminal"] {
		case info.Terminal:
			seen++
			if row["state"] != tools.AgentStarting {
				t.Errorf("the agent right after its launch is %v, want starting", row["state"])
			}
		case shell:
			seen++
		}
	}
	if seen != 2 {
		t.Fatalf("terminal_list: %+v", raw.Terminals)
	}
	if a := agentInfo(t, op, info.Terminal); a.State != tools.AgentStarting {
		t.Errorf("agent_status right after the launch: %+v", a)
	}
}
