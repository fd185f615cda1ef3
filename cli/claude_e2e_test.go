package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/fakemodel"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// claudeCodePackage is the Claude Code release the tests run (CONTRACT
// §29, README's supported agents table).
const claudeCodePackage = "@anthropic-ai/claude-code@2.1.328"

// claudeCodeOlder is the older release that keeps working: its hooks
// predate StopFailure, so its failed turn comes from the screen.
const claudeCodeOlder = "@anthropic-ai/claude-code@2.1.197"

// claudeCodePackages are the releases the permission and state tests run,
// each as a subtest named by its version.
var claudeCodePackages = []string{claudeCodePackage, claudeCodeOlder}

// claudeVersion is a package's version ("2.1.328").
func claudeVersion(pkg string) string { return pkg[strings.LastIndex(pkg, "@")+1:] }

// claudeBin installs pkg and returns the directory of its claude binary
// (checked to run and be that version once per test binary).
func claudeBin(t *testing.T, pkg string) string {
	t.Helper()
	dir := testenv.NPM(t, pkg)
	bin := filepath.Join(dir, "node_modules", ".bin")
	check, _ := claudeChecked.LoadOrStore(pkg, sync.OnceValue(func() string {
		if _, err := os.Stat(filepath.Join(bin, "claude")); err != nil {
			return fmt.Sprintf("npm installed %s without a claude binary: %v", pkg, err)
		}
		if out, err := exec.Command(filepath.Join(bin, "claude"), "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), claudeVersion(pkg)) {
			return fmt.Sprintf("%s's claude --version: %v %q (npm install %s)", pkg, err, out, pkg)
		}
		return ""
	}))
	if why := check.(func() string)(); why != "" {
		testenv.SkipOrFail(t, "%s", why)
	}
	return bin
}

// claudeChecked holds, per package, what is wrong with its claude binary
// ("" when nothing).
var claudeChecked sync.Map

// prependPath puts dir first on the PATH of e's commands.
func (e *e2e) prependPath(dir string) {
	for i, kv := range e.env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			e.env[i] = "PATH=" + dir + string(os.PathListSeparator) + p
		}
	}
}

// newClaudeE2E is an end-to-end environment for the real Claude Code of
// pkg against the scripted fake Messages API: its claude first on PATH,
// and claudeEnv with a home directory of its own. It returns the fake,
// the home and a working directory. The home is removed once nothing
// writes it any more: a Claude Code still running as the test ends (its
// tmux server is killed after the test's directories are removed) may
// still be writing there.
func newClaudeE2E(t *testing.T, pkg string, script fakemodel.Script) (e *e2e, fake *fakemodel.Server, home, work string) {
	t.Helper()
	e = newE2E(t)
	e.prependPath(claudeBin(t, pkg))
	fake, err := fakemodel.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	home, err = os.MkdirTemp("", "claude-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !testenv.Until(10*time.Second, func() bool { return os.RemoveAll(home) == nil }) {
			t.Errorf("Claude Code's home %s could not be removed: %v", home, os.RemoveAll(home))
		}
	})
	work = t.TempDir()
	e.env = append(e.env, claudeEnv(home, fake.URL)...)
	return e, fake, home, work
}

// trustClaude answers Claude Code's first-run questions in its state file
// under home (onboarding done, the dummy key approved, work trusted):
// its TUI then runs without a login.
func trustClaude(t *testing.T, home, work string) {
	t.Helper()
	state := map[string]any{"hasCompletedOnboarding": true,
		"customApiKeyResponses": map[string]any{"approved": []string{dummyKey[len(dummyKey)-20:]}, "rejected": []string{}},
		"projects":              map[string]any{work: map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}}}
	b, _ := json.Marshal(state)
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// claudeTUI launches Claude Code's TUI as node name in work and waits
// until its screen shows the prompt's hint. (A terminal_wait_for would
// wait for the hint to be drawn again: it counts only output after the
// call, and the hint is often on the screen before the launch returns.)
func (e *e2e) claudeTUI(name, work string) string {
	e.t.Helper()
	node := strings.TrimSpace(e.must(e.ts, "agent", "claude", "--name", name, "--cwd", work, "--", "claude", "--permission-mode", "default"))
	e.waitScreen(node, "shortcuts")
	return node
}

// claudeEnv is the environment that keeps Claude Code on this machine:
// the fake model on loopback, a dummy key, no telemetry, error reports,
// updates or other nonessential traffic, and a HOME of its own.
func claudeEnv(home, baseURL string) []string {
	return []string{"HOME=" + home, "ANTHROPIC_BASE_URL=" + baseURL, "ANTHROPIC_API_KEY=" + dummyKey,
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1", "DISABLE_BUG_COMMAND=1", "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1"}
}

// dummyKey is the API key Claude Code is given (the fake checks none).
const dummyKey = "sk-ant-test-dummy-key-0000"

// markerScript is the fake model: asked to "create PATH", it calls Bash to
// touch PATH; shown the tool's result, it says what it saw.
var markerPrompt = regexp.MustCompile(`create (/\S+)`)

func markerScript(req *fakemodel.Request) fakemodel.Reply {
	if trs := req.ToolResults(); len(trs) > 0 {
		return fakemodel.Reply{Blocks: []fakemodel.Block{{Text: "tool said: " + trs[len(trs)-1].ToolResultText()}}}
	}
	if !req.HasTool("Bash") || len(req.Messages) == 0 {
		return fakemodel.Reply{}
	}
	// Once a tool result is in the conversation (above), the model only
	// talks; before, a request offering Bash with the prompt gets the
	// tool call.
	var text strings.Builder
	for _, msg := range req.Messages {
		if msg.Role != "user" {
			continue
		}
		for _, b := range msg.Blocks() {
			text.WriteString(b.Text + "\n")
		}
	}
	m := markerPrompt.FindStringSubmatch(text.String())
	if m == nil {
		return fakemodel.Reply{Blocks: []fakemodel.Block{{Text: "nothing to do"}}}
	}
	return fakemodel.Reply{Blocks: []fakemodel.Block{{ToolName: "Bash", ToolInput: map[string]any{"command": "touch " + m[1], "description": "create the marker"}}}}
}

// toolResultFor finds the tool_result the fake received for the run that
// touched marker.
func toolResultFor(fake *fakemodel.Server, marker string) (string, bool) {
	for _, r := range fake.Requests() {
		for _, tr := range r.ToolResults() {
			for _, m := range r.Messages {
				for _, b := range m.Blocks() {
					if b.Type == "tool_use" && b.ID == tr.ToolUseID && strings.Contains(string(b.Input), marker) {
						return tr.ToolResultText(), tr.IsError
					}
				}
			}
		}
	}
	return "", false
}

// waitDialog polls termsprawl dialogs until a dialog of node shows.
func (e *e2e) waitDialog(node string, within time.Duration) tools.Dialog {
	e.t.Helper()
	var found tools.Dialog
	if !testenv.Until(within, func() bool {
		var l tools.DialogList
		e.op("dialog_list", map[string]any{}, &l)
		for _, d := range l.Dialogs {
			if d.Node == node {
				found = d
				return true
			}
		}
		return false
	}) {
		_, snap, _ := e.run(e.ts, "snapshot", node)
		e.t.Fatalf("no dialog of %s within %v; screen:\n%s", node, within, snap)
	}
	return found
}

// agentState is node's row in agent_status.
func (e *e2e) agentState(node string) tools.AgentInfo {
	e.t.Helper()
	out := e.must(e.ctl, "--session", e.oper, "call", "agent_status")
	var res struct {
		Value tools.AgentList `json:"value"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		e.t.Fatal(err)
	}
	for _, a := range res.Value.Agents {
		if a.Node == node {
			return a
		}
	}
	e.t.Fatalf("%s not in agent_status: %s", node, out)
	return tools.AgentInfo{}
}

// waitExited waits for node's program to end.
func (e *e2e) waitExited(node string) {
	e.t.Helper()
	args, _ := json.Marshal(map[string]any{"terminal": node, "wait": "exit", "timeout_ms": 40000})
	out := e.must(e.ctl, "--session", e.oper, "call", "terminal_wait_for", string(args))
	if !strings.Contains(out, `"matched": true`) {
		e.t.Fatalf("node %s did not exit: %s", node, out)
	}
}

// The real Claude Code in -p mode, wired by `termsprawl agent claude`,
// against a scripted fake of the Messages API: its Bash permission prompt
// becomes a termsprawl dialog naming Bash; deny → the command did not run
// and the model was told the human's reason; allow → it ran; nobody
// answers → deny at the dialog's timeout; agent_status follows the hooks.
func TestClaudeCodeHooks(t *testing.T) {
	// Not parallel: the real Claude Code TUI on a loaded 2-core machine
	// swallowed a submitted line's Enter when three more end-to-end tests
	// ran beside it; it runs alone, before the parallel tests.
	for _, pkg := range claudeCodePackages {
		t.Run(claudeVersion(pkg), func(t *testing.T) { claudeCodeHooks(t, pkg) })
	}
}

func claudeCodeHooks(t *testing.T, pkg string) {
	script, touch := fakemodel.Script(markerScript), "touch "
	if pkg == claudeCodeOlder {
		// 2.1.197 in -p mode blocks a plain `touch` in its own directory
		// "for security" without asking (its PermissionRequest hook never
		// runs); a command it cannot read asks.
		touch = `sh -c 'touch "$0"' `
		script = func(req *fakemodel.Request) fakemodel.Reply {
			r := markerScript(req)
			for i, b := range r.Blocks {
				if cmd, ok := b.ToolInput["command"].(string); ok && b.ToolName == "Bash" {
					in := maps.Clone(b.ToolInput)
					in["command"] = touch + strings.TrimPrefix(cmd, "touch ")
					r.Blocks[i].ToolInput = in
				}
			}
			return r
		}
	}
	e, fake, home, work := newClaudeE2E(t, pkg, script)
	up, _ := e.up()
	defer e.down(up)

	run := func(name, marker string, extra ...string) string {
		args := append([]string{"agent", "claude", "--name", name, "--cwd", work, "--", "claude", "-p", "please create " + marker}, extra...)
		return strings.TrimSpace(e.must(e.ts, args...))
	}

	if pkg == claudeCodeOlder {
		// 2.1.197 runs no PermissionRequest hook in -p mode: it refuses
		// the command itself ("requires approval"), and no dialog opens
		// (docs/CHOICES.md); its TUI asks through the hook (below).
		refused := filepath.Join(work, "refused")
		node := run("refused", refused)
		e.waitExited(node)
		if text, _ := toolResultFor(fake, refused); !strings.Contains(text, "requires approval") {
			t.Fatalf("2.1.197 -p: the model was told %q", text)
		}
		if _, err := os.Stat(refused); err == nil {
			t.Fatal("2.1.197 -p ran a command nobody approved")
		}
		if out := e.must(e.ts, "dialogs", "--json"); strings.Contains(out, node) {
			t.Fatalf("2.1.197 -p opened a dialog: %s", out)
		}
	} else {
		// Deny, with a reason.
		denied := filepath.Join(work, "denied")
		node := run("deny", denied)
		d := e.waitDialog(node, 2*time.Minute)
		if d.Kind != "permission" || !strings.HasPrefix(d.Title, "Bash: "+touch+denied) {
			t.Fatalf("dialog %+v", d)
		}
		if st := e.agentState(node); st.State != tools.AgentWaiting || !strings.Contains(st.Message, "Bash") {
			t.Fatalf("agent_status while the dialog is open: %+v", st)
		}
		if out := e.must(e.ts, "answer", d.ID, "deny", "--reason", "not in this repository"); !strings.Contains(out, "answered "+d.ID+": deny") {
			t.Fatalf("answer printed %q", out)
		}
		e.waitExited(node)
		if _, err := os.Stat(denied); err == nil {
			t.Fatal("the denied command ran")
		}
		text, isErr := toolResultFor(fake, denied)
		if !isErr || !strings.Contains(text, "not in this repository") {
			t.Fatalf("the model was not told the denial: is_error=%v %q", isErr, text)
		}
		// The program ended after its Stop hook: exited, whatever the last
		// hook said (CONTRACT §20), with the Stop in its evidence.
		if st := e.whyOf(node); st.State != tools.AgentExited || !hasEvidence(st, tools.SourceHook, "Stop") {
			t.Fatalf("agent_status after Stop and exit: %+v", st)
		}
		// Answering again is a conflict that names the first answer.
		if code, _, errb := e.run(e.ts, "answer", d.ID, "allow"); code != ExitNo || !strings.Contains(errb, "already answered (deny)") {
			t.Fatalf("second answer: exit %d, %q", code, errb)
		}

		// Allow.
		allowed := filepath.Join(work, "allowed")
		node = run("allow", allowed)
		d = e.waitDialog(node, 2*time.Minute)
		e.must(e.ts, "answer", d.ID, "allow")
		e.waitExited(node)
		if _, err := os.Stat(allowed); err != nil {
			t.Fatalf("the allowed command did not run: %v", err)
		}

		// Nobody answers: deny at the dialog's timeout (shortened for the
		// test through the hook's environment), and a late answer is told.
		settings := filepath.Join(e.state, tools.AgentToolsDir, "claude-settings.json")
		late := filepath.Join(work, "unanswered")
		node = strings.TrimSpace(e.must(e.ts, "agent", "claude", "--name", "late", "--cwd", work, "--",
			"env", "TERMSPRAWL_HOOK_DIALOG_TIMEOUT=3s", "claude", "-p", "please create "+late, "--settings", settings))
		d = e.waitDialog(node, 2*time.Minute)
		e.waitExited(node)
		if _, err := os.Stat(late); err == nil {
			t.Fatal("an unanswered permission was allowed")
		}
		if text, isErr := toolResultFor(fake, late); !isErr || !strings.Contains(text, "nobody answered") {
			t.Fatalf("the model was not told the timeout: is_error=%v %q", isErr, text)
		}
		if code, _, errb := e.run(e.ts, "answer", d.ID, "allow"); code != ExitNo || !strings.Contains(errb, "timed out") {
			t.Fatalf("answer after the timeout: exit %d, %q", code, errb)
		}
	}
	// Interactive, in its TUI in the node: Claude Code runs without a
	// login when its first-run questions are answered in its own state
	// file under this test's HOME (onboarding done, the dummy key
	// approved, the folder trusted). --permission-mode default: the
	// default mode may be auto, where a classifier decides instead of
	// asking.
	trustClaude(t, home, work)
	inter := filepath.Join(work, "interactive")
	node := e.claudeTUI("tui", work)
	e.must(e.ts, "send", node, "please create "+inter)
	d := e.waitDialog(node, 2*time.Minute)
	if !strings.HasPrefix(d.Title, "Bash: "+touch+inter) {
		t.Fatalf("interactive dialog %+v", d)
	}
	if st := e.agentState(node); st.State != tools.AgentWaiting {
		t.Fatalf("agent_status while the TUI waits: %+v", st)
	}
	e.must(e.ts, "answer", d.ID, "allow")
	var errStat error
	if !testenv.Until(60*time.Second, func() bool {
		_, errStat = os.Stat(inter)
		if st := e.agentState(node); errStat == nil && st.State == tools.AgentIdle {
			return true
		}
		return false
	}) {
		_, snap, _ := e.run(e.ts, "snapshot", node)
		t.Fatalf("the interactive run did not finish (marker: %v, state %+v); screen:\n%s", errStat, e.agentState(node), snap)
	}
	e.must(e.ts, "kill", node)

	for _, p := range fake.Paths() {
		if p != "POST /v1/messages" {
			t.Logf("Claude Code also asked the fake for %s", p)
		}
	}
}
