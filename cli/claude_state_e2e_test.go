package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/fakemodel"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator/agentstate"
	"github.com/termsprawl/termsprawl/tools"
)

// lastUserText is the text of the conversation's last user message.
func lastUserText(req *fakemodel.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role != "user" {
			continue
		}
		var b strings.Builder
		for _, bl := range req.Messages[i].Blocks() {
			b.WriteString(bl.Text + "\n")
		}
		return b.String()
	}
	return ""
}

// whyOf is agent_status {node, explain: true}'s row.
func (e *e2e) whyOf(node string) tools.AgentInfo {
	e.t.Helper()
	// In process, not through a binary: the waits poll it, and a
	// process per poll cost a core's worth of CPU while they waited.
	var l tools.AgentList
	e.op("agent_status", map[string]any{"node": node, "explain": true}, &l)
	if len(l.Agents) != 1 {
		e.t.Fatalf("agent_status %s: %d rows", node, len(l.Agents))
	}
	return l.Agents[0]
}

// waitState waits for node's agent state to be one of states; it returns
// the row and how long it took.
func (e *e2e) waitState(node string, within time.Duration, states ...string) (tools.AgentInfo, time.Duration) {
	e.t.Helper()
	start := time.Now()
	a := e.waitWhy(node, within, fmt.Sprint(states), func(a tools.AgentInfo) bool { return slices.Contains(states, a.State) })
	return a, time.Since(start)
}

// waitWhy waits for node's row to satisfy ok.
func (e *e2e) waitWhy(node string, within time.Duration, what string, ok func(tools.AgentInfo) bool) tools.AgentInfo {
	e.t.Helper()
	var a tools.AgentInfo
	if !testenv.Until(within, func() bool { a = e.whyOf(node); return ok(a) }) {
		_, snap, _ := e.run(e.ts, "snapshot", node)
		e.t.Fatalf("%s: not %s within %v: %+v\nscreen:\n%s", node, what, within, a, snap)
	}
	return a
}

// hasEvidence reports whether why holds source/event.
func hasEvidence(a tools.AgentInfo, source, event string) bool {
	for _, w := range a.Why {
		if w.Source == source && (event == "" || w.Event == event) {
			return true
		}
	}
	return false
}

// The real Claude Code TUI in a node, against the scripted fake Messages
// API: its states through its hooks, its dialogs, an interrupt, an API
// failure and its death, each with its evidence in why; and a webhook
// that gets one POST per node and event.
func TestClaudeCodeState(t *testing.T) {
	// Not parallel: the real Claude Code TUI on a loaded 2-core machine
	// swallowed a submitted line's Enter when three more end-to-end tests
	// ran beside it; it runs alone, before the parallel tests.
	for _, pkg := range claudeCodePackages {
		t.Run(claudeVersion(pkg), func(t *testing.T) { claudeCodeState(t, pkg) })
	}
}

func claudeCodeState(t *testing.T, pkg string) {
	hold := make(chan struct{})
	defer close(hold)
	// Each scripted trouble happens once: Claude Code keeps a failed
	// prompt in the conversation (merged with the next one).
	var failed, hung bool
	e, _, home, work := newClaudeE2E(t, pkg, func(req *fakemodel.Request) fakemodel.Reply {
		if !req.HasTool("Bash") {
			return fakemodel.Reply{}
		}
		last := lastUserText(req)
		switch {
		case strings.Contains(last, "please fail") && !failed:
			failed = true
			// (Claude Code puts an interrupted prompt back in its input,
			// so this prompt may follow "please hang".)
			return fakemodel.Reply{Status: http.StatusInternalServerError}
		case strings.Contains(last, "please hang") && !hung:
			hung = true
			return fakemodel.Reply{Hold: hold}
		case strings.Contains(last, "please create"):
			return markerScript(req)
		case len(req.ToolResults()) > 0 && !strings.Contains(last, "please"):
			return markerScript(req)
		}
		return fakemodel.Reply{Blocks: []fakemodel.Block{{Text: "hello there"}}}
	})
	var mu sync.Mutex
	var posts []map[string]any
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		mu.Lock()
		posts = append(posts, m)
		mu.Unlock()
	}))
	defer hook.Close()
	trustClaude(t, home, work)
	up, _, upErr := e.upWith("--notify", "webhook="+hook.URL, "--notify-mode", "normal", "--log-level", "debug")
	defer e.down(up)
	defer func() {
		if t.Failed() {
			t.Logf("termsprawl up's log:\n%s", upErr.String())
		}
	}()

	// The user's own settings, with a hook and a permission of theirs:
	// byte for byte the same after the launch, the turns and the end
	// (in workspace Claude Code keeps its global state in a copy under
	// ~/.claude, so ~/.claude.json stays the user's too).
	userSettings := filepath.Join(home, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(userSettings), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(userSettings, []byte(`{"permissions":{"allow":["Bash(ls:*)"]},"hooks":{"Stop":[{"hooks":[{"type":"command","command":"true"}]}]}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	user := readUserConfig(t, userSettings, filepath.Join(home, ".claude.json"))
	node := strings.TrimSpace(e.must(e.ts, "agent", "claude", "--name", "tui", "--cwd", work, "--", "claude", "--permission-mode", "default"))
	user.assertSame(t, "after the launch")
	if a := e.whyOf(node); a.State != tools.AgentStarting && a.State != tools.AgentIdle {
		t.Fatalf("just launched: %+v", a)
	}
	e.waitScreen(node, "shortcuts") // the prompt's hint (see claudeTUI)
	a, _ := e.waitState(node, 30*time.Second, tools.AgentIdle)
	if !hasEvidence(a, tools.SourceHook, "SessionStart") || !hasEvidence(a, tools.SourceProcess, "launched") {
		t.Fatalf("idle after start without its evidence: %+v", a)
	}

	// starting → working → idle through the hooks.
	e.must(e.ts, "send", node, "say hello")
	a = e.waitWhy(node, 30*time.Second, "idle after a turn", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentIdle && hasEvidence(a, tools.SourceHook, "UserPromptSubmit")
	})
	if a.Why[0].Event != "Stop" || a.Why[1].Event != "UserPromptSubmit" {
		t.Fatalf("a turn's evidence: %+v", a.Why)
	}

	// Esc mid-turn: the turn ends within 10 s (no Stop hook needed).
	e.must(e.ts, "send", node, "please hang")
	e.waitState(node, 30*time.Second, tools.AgentWorking)
	if !testenv.Until(30*time.Second, func() bool { return strings.Contains(e.nodeScreen(node), "esc to interrupt") }) {
		t.Fatal("no busy marker while the turn hangs")
	}
	e.must(e.ctl, "--session", e.oper, "call", "terminal_press", `{"terminal":"`+node+`","keys":"Escape"}`)
	a, took := e.waitState(node, 10*time.Second, tools.AgentIdle, tools.AgentError)
	t.Logf("Esc: %s after %v; why %+v", a.State, took, a.Why[:min(3, len(a.Why))])
	// Measured on 2.1.328 and 2.1.197: no hook fires on an Esc (no Stop,
	// no StopFailure); the turn's end comes from the screen.
	if a.State != tools.AgentIdle || a.Why[0].Source != tools.SourceScreen || a.Why[0].Event != agentstate.ScreenTurnEnded {
		t.Errorf("an interrupted turn: %s with %+v, want idle from the screen", a.State, a.Why[0])
	}
	// Claude Code may put an interrupted prompt back into its input box:
	// delete it, so the next prompt is typed alone (not "please
	// hangplease fail").
	if testenv.Until(3*time.Second, func() bool {
		return strings.HasSuffix(strings.TrimSpace(lastPromptLine(e.nodeScreen(node))), "please hang")
	}) {
		e.must(e.ctl, "--session", e.oper, "call", "terminal_press", `{"terminal":"`+node+`","keys":"`+strings.TrimSpace(strings.Repeat("BSpace ", len("please hang")))+`"}`)
	}

	// An HTTP 500 from the Messages API: error (StopFailure) or idle with
	// the failure in why, within 10 s.
	e.must(e.ts, "send", node, "please fail")
	a, took = e.waitState(node, 10*time.Second+5*time.Second, tools.AgentError)
	t.Logf("HTTP 500: %s after %v; why %+v", a.State, took, a.Why[:min(3, len(a.Why))])
	if took > 10*time.Second {
		t.Errorf("the failed turn was seen after %v (want ≤ 10 s)", took)
	}
	// Measured on 2.1.328 and 2.1.197: an HTTP 500 fires StopFailure.
	if a.Why[0].Source != tools.SourceHook || a.Why[0].Event != "StopFailure" {
		t.Errorf("a failed turn's evidence %+v, want the StopFailure hook", a.Why[0])
	}

	// A permission request: waiting, needs a human; answered: working.
	marker := filepath.Join(work, "state-marker")
	e.must(e.ts, "send", node, "please create "+marker)
	d := e.waitDialog(node, 2*time.Minute)
	a = e.whyOf(node)
	if a.State != tools.AgentWaiting || !a.NeedsHuman || a.Why[0].Source != tools.SourceDialog {
		t.Fatalf("while the dialog is open: %+v", a)
	}
	e.must(e.ts, "answer", d.ID, "allow")
	a = e.whyOf(node)
	if a.State != tools.AgentWorking && a.State != tools.AgentIdle {
		t.Fatalf("after the answer: %+v", a)
	}
	e.waitState(node, 30*time.Second, tools.AgentIdle)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the allowed command did not run: %v", err)
	}
	out := e.must(e.ts, "why", node)
	if !strings.Contains(out, "is idle") || !strings.Contains(out, "dialog") || !strings.Contains(out, "answered") {
		t.Fatalf("termsprawl why:\n%s", out)
	}

	// The program killed: exited, never working again.
	e.must(e.ctl, "--session", e.oper, "call", "terminal_signal", `{"terminal":"`+node+`","signal":"KILL"}`)
	a, _ = e.waitState(node, 10*time.Second, tools.AgentExited)
	user.assertSame(t, "after the turns and the end")
	if a.Why[0].Source != tools.SourceProcess {
		t.Fatalf("exited without process evidence: %+v", a.Why)
	}
	var l struct {
		Value tools.NodeList `json:"value"`
	}
	_ = json.Unmarshal([]byte(e.must(e.ctl, "--session", e.oper, "call", "terminal_list")), &l)
	for _, n := range l.Value.Terminals {
		if n.Terminal == node && (n.State != tools.AgentExited || n.Since == "") {
			t.Fatalf("terminal_list row %+v", n)
		}
	}

	// One POST per node and event, each with every field.
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]int{}
	for _, p := range posts {
		seen[p["event"].(string)]++
		for _, k := range []string{"node", "name", "kind", "event", "state", "title", "text", "answer", "at"} {
			if _, ok := p[k]; !ok {
				t.Errorf("POST without %q: %v", k, p)
			}
		}
	}
	if seen["needs_human"] != 1 || seen["error"] != 1 {
		t.Errorf("webhook events %v, want one needs_human and one error", seen)
	}
}

// lastPromptLine is the last line of a Claude Code screen that starts
// with its prompt mark (❯): the input box, once the turn is over.
func lastPromptLine(screen string) string {
	last := ""
	for _, l := range strings.Split(screen, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "❯") {
			last = t
		}
	}
	return last
}
