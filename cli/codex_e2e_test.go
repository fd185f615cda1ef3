package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/fakemodel"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// codexPackage is the Codex release the tests run (docs/CHOICES.md).
const codexPackage = "@openai/codex@0.169.0"

var createPrompt = regexp.MustCompile(`create (/\S+)`)

// codexScript is the Responses API stand-in's script: "create PATH"
// calls exec_command asking to run outside the sandbox (which needs an
// approval), "slow" never ends, "fail" is an HTTP 500, anything else a
// plain answer; shown a tool's output, it says what it saw.
func codexScript(hold <-chan struct{}) fakemodel.ResponsesScript {
	return func(r *fakemodel.ResponsesRequest) fakemodel.Reply {
		items := r.Items()
		if len(items) > 0 && items[len(items)-1].Type == "function_call_output" {
			return fakemodel.Reply{Blocks: []fakemodel.Block{{Text: "tool said: " + items[len(items)-1].OutputText()}}}
		}
		last := r.LastUserText()
		switch {
		case strings.Contains(last, "slow"):
			return fakemodel.Reply{Hold: hold}
		case strings.Contains(last, "fail"):
			return fakemodel.Reply{Status: 500}
		}
		if m := createPrompt.FindStringSubmatch(last); m != nil && r.HasTool("exec_command") {
			return fakemodel.Reply{Blocks: []fakemodel.Block{{ToolName: "exec_command", ToolInput: map[string]any{
				"cmd": "touch " + m[1], "sandbox_permissions": "require_escalated", "justification": "create the marker"}}}}
		}
		return fakemodel.Reply{Blocks: []fakemodel.Block{{Text: "hello from the stand-in"}}}
	}
}

// userConfig is a user's own agent configuration files and their bytes
// (absent files as nil), to check that termsprawl wrote none of them.
// appendable files may grow by the agent's own bookkeeping (Codex adds
// [tui] notes to config.toml on its own): what it appends must carry no
// hooks, MCP servers, notify or permissions (CONTRACT §29).
type userConfig struct {
	files      map[string][]byte
	appendable map[string]bool
}

func readUserConfig(t *testing.T, paths ...string) userConfig {
	t.Helper()
	c := userConfig{files: map[string][]byte{}, appendable: map[string]bool{}}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		c.files[p] = b
	}
	return c
}

// wiringWords are what termsprawl's wiring would write.
var wiringWords = regexp.MustCompile(`(?i)hook|mcp|notify|termsprawl|approval|sandbox|permission|allow|trust|otel|telemetry`)

func (c userConfig) assertSame(t *testing.T, when string) {
	t.Helper()
	for p, want := range c.files {
		got, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if string(got) == string(want) && (got == nil) == (want == nil) {
			continue
		}
		if tail, ok := strings.CutPrefix(string(got), string(want)); ok && want != nil && c.appendable[p] && !wiringWords.MatchString(tail) {
			t.Logf("%s: the agent appended its own bookkeeping to %s: %q", when, p, tail)
			continue
		}
		t.Fatalf("%s: the user's %s changed:\nbefore %q\nafter  %q", when, p, want, got)
	}
}

// The real Codex TUI wired by `termsprawl agent codex` against the
// Responses API stand-in (CONTRACT §29): its hooks give the states with
// evidence, its PermissionRequest hook is a termsprawl dialog (deny with
// a reason reaches the model; allow runs the command), an Esc and an
// HTTP 500 are seen from the screen (Codex has no hook for them), its
// API key comes from --env, a restore after its tmux server was killed
// resumes the same conversation, and the user's own config.toml is
// byte for byte what it was.
func TestCodexWired(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	dir := testenv.NPM(t, codexPackage)
	bin := filepath.Join(dir, "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, "codex")); err != nil {
		testenv.SkipOrFail(t, "npm installed %s without a codex binary: %v", codexPackage, err)
	}
	hold := make(chan struct{})
	fake, err := fakemodel.StartResponses(codexScript(hold))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(hold); _ = fake.Close() })
	e.prependPath(bin)
	home, work := t.TempDir(), t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	// The user's own config: their model, their trust of the directory
	// and an MCP server of theirs.
	userToml := "model = \"gpt-5\"\n\n[projects.\"" + work + "\"]\ntrust_level = \"trusted\"\n\n[mcp_servers.theirs]\ncommand = \"true\"\nenabled = false\n"
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(userToml), 0o600); err != nil {
		t.Fatal(err)
	}
	user := readUserConfig(t, filepath.Join(codexHome, "config.toml"), filepath.Join(codexHome, "hooks.json"))
	user.appendable[filepath.Join(codexHome, "config.toml")] = true
	e.env = append(e.env, "HOME="+home)
	up, _ := e.up()
	provider := `model_providers.fake={name="fake",base_url="` + fake.URL + `",wire_api="responses",env_key="OPENAI_API_KEY",request_max_retries=0,stream_max_retries=0}`
	codexArgs := []string{"codex", "-c", "model_provider=fake", "-c", provider, "-m", "gpt-5", "-a", "on-request", "-s", "read-only",
		"-c", "check_for_update_on_startup=false"}
	node := strings.TrimSpace(e.must(e.ts, append([]string{"agent", "codex", "--name", "cx", "--cwd", work,
		"--env", "OPENAI_API_KEY=sk-codex-dummy-VALUE", "--"}, codexArgs...)...))
	user.assertSame(t, "after the launch")

	// A turn: working from UserPromptSubmit, idle from Stop.
	e.waitState(node, 60*time.Second, tools.AgentIdle)
	e.must(e.ts, "send", node, "please say hi")
	a := e.waitWhy(node, 60*time.Second, "idle from the Stop hook", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentIdle && hasEvidence(a, tools.SourceHook, "Stop")
	})
	if !hasEvidence(a, tools.SourceHook, "UserPromptSubmit") || !hasEvidence(a, tools.SourceProcess, "launched") {
		t.Fatalf("the turn's evidence: %+v", a.Why)
	}
	if r := fake.Requests(); len(r) == 0 || r[0].Header.Get("Authorization") != "Bearer sk-codex-dummy-VALUE" {
		t.Fatalf("the --env API key did not reach Codex's requests")
	}

	// Deny, with a reason that reaches the model.
	m1, m2 := filepath.Join(work, "m1"), filepath.Join(work, "m2")
	e.must(e.ts, "send", node, "please create "+m1)
	d := e.waitDialog(node, 60*time.Second)
	if d.Kind != "permission" || !strings.Contains(d.Title, "touch "+m1) {
		t.Fatalf("dialog %+v", d)
	}
	if a := e.whyOf(node); a.State != tools.AgentWaiting || !a.NeedsHuman {
		t.Fatalf("with its dialog open: %+v", a)
	}
	e.must(e.ts, "answer", d.ID, "deny", "--reason", "not today")
	e.waitWhy(node, 60*time.Second, "idle after the denial", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentIdle && hasEvidence(a, tools.SourceDialog, "answered")
	})
	if _, err := os.Stat(m1); err == nil {
		t.Fatalf("%s exists: the denied command ran", m1)
	}
	if !slices.ContainsFunc(fake.Requests(), func(r *fakemodel.ResponsesRequest) bool {
		return slices.ContainsFunc(r.ToolOutputs(), func(it fakemodel.ResponsesItem) bool { return strings.Contains(it.OutputText(), "not today") })
	}) {
		t.Fatalf("the model was not told the human's reason")
	}

	// Allow: the command runs.
	e.must(e.ts, "send", node, "please create "+m2)
	d = e.waitDialog(node, 60*time.Second)
	e.must(e.ts, "answer", d.ID, "allow")
	waitExists(t, m2)
	e.waitState(node, 60*time.Second, tools.AgentIdle)

	// An interrupted turn (Esc): no hook fires; the screen says so.
	sent := len(fake.Requests())
	e.must(e.ts, "send", node, "please be slow")
	e.waitState(node, 30*time.Second, tools.AgentWorking)
	waitFakeRequest(t, func() int { return len(fake.Requests()) }, sent+1)
	pressed := time.Now()
	e.must(e.ctl, "--session", e.oper, "call", "terminal_press", `{"terminal":"`+node+`","keys":"Escape"}`)
	a = e.waitWhy(node, 10*time.Second, "idle after Esc", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentIdle && len(a.Why) > 0 && a.Why[0].Source == tools.SourceScreen
	})
	t.Logf("Esc seen after %v: %s", time.Since(pressed).Round(time.Millisecond), a.Why[0].Detail)

	// A failed turn (HTTP 500): error, from the screen.
	e.must(e.ts, "send", node, "please fail")
	a = e.waitWhy(node, 60*time.Second, "error after the HTTP 500", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentError && len(a.Why) > 0 && a.Why[0].Event == "api_error"
	})
	user.assertSame(t, "after the turns")

	// Restore after its tmux server is killed: the same conversation.
	b, err := os.ReadFile(filepath.Join(e.state, "nodes", node+".launch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Conversation string `json:"conversation"`
	}
	if err := json.Unmarshal(b, &rec); err != nil || rec.Conversation == "" {
		t.Fatalf("no conversation kept: %v %s", err, b)
	}
	e.down(up)
	if _, err := e.tmux.Cmd("kill-server"); err != nil {
		t.Fatal(err)
	}
	up2, _ := e.up()
	defer e.down(up2)
	if out := e.must(e.ts, "restore", node); !strings.Contains(out, "resuming codex's conversation "+rec.Conversation) {
		t.Fatalf("restore: %s", out)
	}
	var list tools.NodeList
	if r := e.callValue(e.oper, "terminal_list", map[string]any{}, &list); !r.OK {
		t.Fatal(r.Error)
	}
	for _, n := range list.Terminals {
		if n.Terminal == node {
			want := append([]string{"codex", "resume", rec.Conversation}, codexArgs[1:]...)
			if len(n.Command) < len(want) || !slices.Equal(n.Command[:len(want)], want) {
				t.Fatalf("restored argv %q, want it to start %q", n.Command, want)
			}
		}
	}
	ready, _ := e.waitState(node, 60*time.Second, tools.AgentIdle)
	// Idle on a resume may come from the screen's "quiet, its prompt up",
	// and a resumed transcript's own "› please ..." lines look like the
	// prompt: wait for the composer's footer, the input really up, and
	// for the resume to be done (Codex draws its composer while it still
	// says "Resuming session…", and drops what is typed then).
	var atSend string
	if !testenv.Until(60*time.Second, func() bool {
		atSend = e.screenIfAny(node)
		return strings.Contains(atSend, "? for shortcuts") && !strings.Contains(atSend, "Resuming session")
	}) {
		t.Fatalf("the resumed Codex's input never came up; the node: %+v\nscreen:\n%s", e.whyOf(node), atSend)
	}
	t.Logf("the resumed node before the send: %+v\nscreen:\n%s", ready, atSend)
	before := len(fake.Requests())
	e.must(e.ts, "send", node, "what did I say")
	if !testenv.Until(60*time.Second, func() bool {
		rs := fake.Requests()
		return len(rs) > before && strings.Contains(rs[len(rs)-1].UserText(), "please say hi")
	}) {
		_, snap, _ := e.run(e.ts, "snapshot", node)
		t.Fatalf("not within 1m0s: the resumed Codex did not carry the earlier conversation; %d requests (%d before the send); the node: %+v\nscreen:\n%s",
			len(fake.Requests()), before, e.whyOf(node), snap)
	}
	e.must(e.ts, "kill", node)
	user.assertSame(t, "after the close")
}

// waitFakeRequest waits until a stand-in has received n requests.
func waitFakeRequest(t *testing.T, count func() int, n int) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() bool { return count() >= n },
		func() string { return fmt.Sprintf("the stand-in has %d requests, want %d", count(), n) })
}

// waitExists waits until path exists.
func waitExists(t *testing.T, path string) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, func() bool {
		_, err := os.Stat(path)
		return err == nil
	}, testenv.Msg("%s does not exist", path))
}

// readLaunchConversation is the conversation id kept with node's launch.
func readLaunchConversation(t *testing.T, state, node string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "nodes", node+".launch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Conversation string `json:"conversation"`
	}
	if err := json.Unmarshal(b, &rec); err != nil || rec.Conversation == "" {
		t.Fatalf("no conversation kept: %v %s", err, b)
	}
	return rec.Conversation
}

// assertArgv checks that node's command is prefix, then has resume
// right after it (the only thing a restore adds).
func (e *e2e) assertArgv(node string, prefix, resume []string) {
	e.t.Helper()
	var list tools.NodeList
	if r := e.callValue(e.oper, "terminal_list", map[string]any{}, &list); !r.OK {
		e.t.Fatal(r.Error)
	}
	for _, n := range list.Terminals {
		if n.Terminal != node {
			continue
		}
		want := append(slices.Clone(prefix), resume...)
		if !slices.Equal(n.Command[:min(len(n.Command), len(prefix))], prefix) || !slices.Contains(n.Command, resume[len(resume)-1]) {
			e.t.Fatalf("restored argv %q, want %q with %q", n.Command, prefix, want)
		}
		return
	}
	e.t.Fatalf("%s not listed", node)
}
