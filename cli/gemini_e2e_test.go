package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/fakemodel"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// geminiPackage is the Gemini CLI release the tests run.
const geminiPackage = "@google/gemini-cli@0.61.0"

// geminiScript is the generateContent stand-in's script: as codexScript,
// with run_shell_command for "create PATH".
//
// Gemini CLI retries a 5xx with backoff (for minutes: measured, even with
// general.maxAttempts 1), so the stand-in answers the retries of a
// failing prompt with a 400, which it does not retry.
func geminiScript(hold <-chan struct{}) fakemodel.GeminiScript {
	var mu sync.Mutex
	failed := 0
	return func(r *fakemodel.GeminiRequest) fakemodel.Reply {
		if out, ok := r.LastFunctionResponse(); ok {
			return fakemodel.Reply{Blocks: []fakemodel.Block{{Text: "tool said: " + out}}}
		}
		last := r.LastUserText()
		switch {
		case strings.Contains(last, "slow"):
			return fakemodel.Reply{Hold: hold}
		case strings.Contains(last, "fail"):
			mu.Lock()
			defer mu.Unlock()
			if failed++; failed > 1 {
				return fakemodel.Reply{Status: 400}
			}
			return fakemodel.Reply{Status: 500}
		}
		if m := createPrompt.FindStringSubmatch(last); m != nil && r.HasTool("run_shell_command") {
			return fakemodel.Reply{Blocks: []fakemodel.Block{{ToolName: "run_shell_command", ToolInput: map[string]any{"command": "touch " + m[1]}}}}
		}
		return fakemodel.Reply{Blocks: []fakemodel.Block{{Text: "hello from the stand-in"}}}
	}
}

// typeAndEnter types text into node, waits for the screen to settle and
// presses Enter (Gemini CLI takes a text and its Enter sent at once as
// a paste: the prompt is not submitted). An Enter that the TUI swallowed
// while it was still busy starting is pressed again until requests()
// grows (an Enter on an empty prompt does nothing).
func (e *e2e) typeAndEnter(node, text string, requests func() int) {
	e.t.Helper()
	before := requests()
	e.must(e.ctl, "--session", e.oper, "call", "terminal_type", `{"terminal":"`+node+`","text":`+jsonString(text)+`,"wait":{"wait":"quiet","quiet_ms":300}}`)
	for try := 0; try < 8; try++ {
		e.must(e.ctl, "--session", e.oper, "call", "terminal_press", `{"terminal":"`+node+`","keys":"Enter"}`)
		if testenv.Until(8*time.Second, func() bool { return requests() > before }) {
			return
		}
	}
	_, snap, _ := e.run(e.ts, "snapshot", node)
	e.t.Fatalf("%q was not submitted to %s; screen:\n%s", text, node, snap)
}

func jsonString(s string) string {
	b := strings.Builder{}
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// newGeminiE2E is an end-to-end environment for the real Gemini CLI
// against the generateContent stand-in (geminiScript): its gemini first
// on PATH, a HOME of its own holding settings as ~/.gemini/settings.json,
// the state directory beneath the test cache (Gemini CLI skips a
// system-defaults file beneath a directory others may write, as /tmp),
// and none of CI's variables. It returns the stand-in, the settings file
// and a working directory.
//
// Gemini CLI starts without its TUI, reading a prompt from stdin, when
// its environment says CI (measured on 0.61.0: CI=true, as .ci/run sets,
// exits 42 "No input provided via stdin"); an agent node gets
// termsprawl's environment, so termsprawl runs here without it, as on a
// developer's machine.
func newGeminiE2E(t *testing.T, settings string) (e *e2e, fake *fakemodel.Gemini, settingsFile, work string) {
	t.Helper()
	e = newE2E(t)
	dir := testenv.NPM(t, geminiPackage)
	bin := filepath.Join(dir, "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, "gemini")); err != nil {
		testenv.SkipOrFail(t, "npm installed %s without a gemini binary: %v", geminiPackage, err)
	}
	cache := testenv.CacheDir(t)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	stateParent, err := os.MkdirTemp(cache, "gemini-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(stateParent) })
	e.state = filepath.Join(stateParent, "state")
	e.oper = tools.OperatorSessionPath(e.state)
	for i, kv := range e.env {
		if strings.HasPrefix(kv, "TERMSPRAWL_HOME=") {
			e.env[i] = "TERMSPRAWL_HOME=" + e.state
		}
	}
	e.env = slices.DeleteFunc(e.env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "CI" || name == "CONTINUOUS_INTEGRATION" || strings.HasPrefix(name, "CI_")
	})
	e.prependPath(bin)
	hold := make(chan struct{})
	fake, err = fakemodel.StartGemini(geminiScript(hold))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(hold); _ = fake.Close() })
	home := t.TempDir()
	work = t.TempDir()
	settingsFile = filepath.Join(home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settingsFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settingsFile, []byte(settings+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.env = append(e.env, "HOME="+home)
	return e, fake, settingsFile, work
}

// The real Gemini CLI wired by `termsprawl agent gemini` against the
// generateContent stand-in (CONTRACT §29): its hooks give the states
// (BeforeAgent, AfterAgent), its BeforeTool hook is a termsprawl dialog
// (deny blocks the tool with the human's reason; allow lets it run under
// the user's --approval-mode yolo, where Gemini CLI asks nothing more),
// an Esc and an HTTP 500 are seen from the screen, restore resumes its
// session, and the user's settings.json is kept.
func TestGeminiWired(t *testing.T) {
	t.Parallel()
	e, fake, settings, work := newGeminiE2E(t, `{"security":{"auth":{"selectedType":"gemini-api-key"}},"mcpServers":{"theirs":{"command":"true"}}}`)
	reqs := func() int { return len(fake.Requests()) }
	user := readUserConfig(t, settings)
	up, _ := e.up()
	args := []string{"agent", "gemini", "--name", "gm", "--cwd", work, "--env", "GEMINI_API_KEY=gemini-dummy-VALUE",
		"--env", "GOOGLE_GEMINI_BASE_URL=" + fake.URL, "--env", "GEMINI_CLI_TRUST_WORKSPACE=true", "--", "gemini", "--approval-mode", "yolo"}
	node := strings.TrimSpace(e.must(e.ts, args...))
	user.assertSame(t, "after the launch")
	e.waitState(node, 90*time.Second, tools.AgentIdle)

	// A turn: BeforeAgent → working, AfterAgent → idle.
	e.typeAndEnter(node, "please say hi", reqs)
	a := e.waitWhy(node, 60*time.Second, "idle from AfterAgent", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentIdle && hasEvidence(a, tools.SourceHook, "AfterAgent")
	})
	if !hasEvidence(a, tools.SourceHook, "BeforeAgent") {
		t.Fatalf("the turn's evidence: %+v", a.Why)
	}
	if r := fake.Requests(); len(r) == 0 || r[0].Header.Get("x-goog-api-key") != "gemini-dummy-VALUE" {
		t.Fatalf("the --env API key did not reach Gemini CLI's requests")
	}

	// Deny, then allow, through termsprawl's dialogs.
	m1, m2 := filepath.Join(work, "m1"), filepath.Join(work, "m2")
	e.typeAndEnter(node, "please create "+m1, reqs)
	d := e.waitDialog(node, 60*time.Second)
	if d.Kind != "permission" || d.Tool != "run_shell_command" || !strings.Contains(d.Title, "touch "+m1) {
		t.Fatalf("dialog %+v", d)
	}
	e.must(e.ts, "answer", d.ID, "deny", "--reason", "not today")
	e.waitWhy(node, 60*time.Second, "idle after the denial", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentIdle && hasEvidence(a, tools.SourceDialog, "answered")
	})
	if _, err := os.Stat(m1); err == nil {
		t.Fatalf("%s exists: the denied command ran", m1)
	}
	if !slices.ContainsFunc(fake.Requests(), func(r *fakemodel.GeminiRequest) bool {
		return slices.ContainsFunc(r.FunctionResponses(), func(s string) bool { return strings.Contains(s, "not today") })
	}) {
		t.Fatalf("the model was not told the human's reason")
	}
	e.typeAndEnter(node, "please create "+m2, reqs)
	d = e.waitDialog(node, 60*time.Second)
	e.must(e.ts, "answer", d.ID, "allow")
	waitExists(t, m2)
	e.waitState(node, 60*time.Second, tools.AgentIdle)

	// An interrupted turn (Esc), from the screen.
	sent := len(fake.Requests())
	e.typeAndEnter(node, "please be slow", reqs)
	e.waitState(node, 30*time.Second, tools.AgentWorking)
	waitFakeRequest(t, func() int { return len(fake.Requests()) }, sent+1)
	pressed := time.Now()
	e.must(e.ctl, "--session", e.oper, "call", "terminal_press", `{"terminal":"`+node+`","keys":"Escape"}`)
	a = e.waitWhy(node, 10*time.Second, "idle after Esc", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentIdle && len(a.Why) > 0 && (a.Why[0].Source == tools.SourceScreen || a.Why[0].Event == "AfterAgent")
	})
	t.Logf("Esc seen after %v: %s %s %s", time.Since(pressed).Round(time.Millisecond), a.Why[0].Source, a.Why[0].Event, a.Why[0].Detail)

	// A failed turn (HTTP 500).
	e.typeAndEnter(node, "please fail", reqs)
	a = e.waitWhy(node, 90*time.Second, "error after the HTTP 500", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentError
	})
	t.Logf("the failed turn: %+v", a.Why[0])
	user.assertSame(t, "after the turns")

	// Restore after its tmux server is killed: the same session.
	rec := readLaunchConversation(t, e.state, node)
	e.down(up)
	if _, err := e.tmux.Cmd("kill-server"); err != nil {
		t.Fatal(err)
	}
	up2, _ := e.up()
	defer e.down(up2)
	if out := e.must(e.ts, "restore", node); !strings.Contains(out, "resuming gemini's conversation "+rec) {
		t.Fatalf("restore: %s", out)
	}
	e.assertArgv(node, []string{"gemini", "--approval-mode", "yolo"}, []string{"--resume", rec})
	// The resumed session shows the earlier conversation (a fresh one
	// would not): Gemini CLI replays its history on --resume. (A prompt
	// typed into the resumed TUI while it replays is lost: measured.)
	wargs := `{"terminal":"` + node + `","wait":"text","text":"please say hi","timeout_ms":40000}`
	if out := e.must(e.ctl, "--session", e.oper, "call", "terminal_wait_for", wargs); !strings.Contains(out, `"matched": true`) {
		_, snap, _ := e.run(e.ts, "snapshot", node)
		t.Fatalf("the resumed Gemini CLI does not show the earlier conversation: %s\n%s", out, snap)
	}
	e.must(e.ts, "kill", node)
	user.assertSame(t, "after the close")
}
