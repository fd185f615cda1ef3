// This file's name sorts first among the package's tests on purpose:
// TestOpencodeWired is the longest (60–80 s), and go test starts the
// parallel tests in the order of their files, so it starts first instead
// of being the last test still running.

package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/fakemodel"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// opencodePackage is the OpenCode release the tests run (docs/CHOICES.md).
// Its binary comes in an optional dependency (opencode-linux-x64 …),
// which npm 11 installs without running install scripts.
const opencodePackage = "opencode-ai@1.18.33"

// messageText is the text of a Messages API message.
func messageText(m fakemodel.Message) string {
	var b strings.Builder
	for _, c := range m.Blocks() {
		b.WriteString(c.Text)
		if c.Type == "tool_result" {
			b.WriteString(c.ToolResultText())
		}
	}
	return b.String()
}

// opencodeScript is the Messages API stand-in's script for OpenCode
// (its provider is @ai-sdk/anthropic pointed here): a request without
// the bash tool (OpenCode's title request) gets a title; shown a tool's
// result, it says what it saw; "create PATH" calls bash, "slow" never
// ends, "fail" is an HTTP 500, anything else a plain answer.
func opencodeScript(hold <-chan struct{}) fakemodel.Script {
	return func(r *fakemodel.Request) fakemodel.Reply {
		if !r.HasTool("bash") {
			return fakemodel.Reply{Blocks: []fakemodel.Block{{Text: "a title"}}}
		}
		last := r.Messages[len(r.Messages)-1]
		for _, b := range last.Blocks() {
			if b.Type == "tool_result" {
				return fakemodel.Reply{Blocks: []fakemodel.Block{{Text: "tool said: " + b.ToolResultText()}}}
			}
		}
		// The newest text block decides: OpenCode sends an interrupted
		// or failed prompt again, merged with the next one into one user
		// message ("please be slow" then "please fail").
		text := ""
		for _, b := range last.Blocks() {
			if strings.TrimSpace(b.Text) != "" {
				text = b.Text
			}
		}
		switch {
		case strings.Contains(text, "slow"):
			return fakemodel.Reply{Hold: hold}
		case strings.Contains(text, "fail"):
			return fakemodel.Reply{Status: 500}
		}
		if m := createPrompt.FindStringSubmatch(text); m != nil {
			return fakemodel.Reply{Blocks: []fakemodel.Block{{ToolName: "bash", ToolInput: map[string]any{
				"command": "touch " + m[1], "description": "create the marker"}}}}
		}
		return fakemodel.Reply{Blocks: []fakemodel.Block{{Text: "hello from the stand-in"}}}
	}
}

// The real OpenCode TUI wired by `termsprawl agent opencode` against the
// Messages API stand-in (CONTRACT §29): termsprawl's plugin (in its own
// config directory, OPENCODE_CONFIG_DIR) turns OpenCode's events into
// states with evidence and its permission requests (bash set to "ask" by
// the user's own config) into termsprawl dialogs whose allow runs the
// command and whose deny reaches the model with the reason; an interrupt
// (Esc Esc) and an HTTP 500 are seen from its session.error and
// session.status events; the API key comes from --env; a restore after
// its tmux server was killed resumes the same session (--session ID);
// the user's own config files are byte for byte what they were.
func TestOpencodeWired(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	dir := testenv.NPM(t, opencodePackage)
	bin := filepath.Join(dir, "node_modules", ".bin")
	if out, err := runVersion(filepath.Join(bin, "opencode"), t.TempDir()); err != nil || !strings.Contains(out, "1.18.33") {
		testenv.SkipOrFail(t, "npm installed %s but its opencode binary does not run (%v): %s", opencodePackage, err, out)
	}
	hold := make(chan struct{})
	fake, err := fakemodel.Start(opencodeScript(hold))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(hold); _ = fake.Close() })
	home, work := t.TempDir(), t.TempDir()
	e.prependPath(bin)
	e.env = slices.DeleteFunc(e.env, func(kv string) bool {
		return strings.HasPrefix(kv, "XDG_") || strings.HasPrefix(kv, "OPENCODE_") || strings.HasPrefix(kv, "HOME=")
	})
	e.env = append(e.env, "HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		// No network at run time: OpenCode's own install of its plugin
		// package into each config directory fails at once offline (it
		// needs none), and no models.dev fetch or update check.
		"npm_config_offline=true", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1")
	userDir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(userDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// The user's own config: their provider (the stand-in, its key from
	// the environment), bash set to ask, and an MCP server of theirs.
	userJSON := `{
  "$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "model": "standin/stand-in",
  "permission": {"bash": "ask"},
  "mcp": {"theirs": {"type": "local", "command": ["true"], "enabled": false}},
  "provider": {"standin": {"npm": "@ai-sdk/anthropic", "name": "stand-in",
    "options": {"baseURL": "` + fake.URL + `/v1", "apiKey": "{env:STANDIN_API_KEY}"},
    "models": {"stand-in": {"name": "stand-in"}}}}
}
`
	if err := os.WriteFile(filepath.Join(userDir, "opencode.json"), []byte(userJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	user := readUserConfig(t, filepath.Join(userDir, "opencode.json"), filepath.Join(userDir, "opencode.jsonc"),
		filepath.Join(userDir, "config.json"), filepath.Join(userDir, "plugins", "termsprawl.js"),
		filepath.Join(userDir, "plugin", "termsprawl.js"), filepath.Join(work, "opencode.json"))
	up, _ := e.up()
	node := strings.TrimSpace(e.must(e.ts, "agent", "opencode", "--name", "oc", "--cwd", work,
		"--env", "STANDIN_API_KEY=sk-opencode-dummy-VALUE"))
	user.assertSame(t, "after the launch")

	// Started: the plugin's SessionStart once OpenCode is up. A turn:
	// working from session.status busy, idle from session.idle.
	e.waitWhy(node, 120*time.Second, "idle from the plugin's SessionStart", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentIdle && hasEvidence(a, tools.SourceHook, "SessionStart")
	})
	// The plugin is loaded before the TUI takes input: type once its
	// prompt is drawn.
	e.waitScreen(node, "Build · stand-in")
	e.typeAndEnter(node, "please say hi", opencodeRequests(fake))
	a := e.waitWhy(node, 120*time.Second, "idle from session.idle", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentIdle && hasEvidence(a, tools.SourceHook, "Stop")
	})
	if !hasEvidence(a, tools.SourceHook, "UserPromptSubmit") || !hasEvidence(a, tools.SourceProcess, "launched") {
		t.Fatalf("the turn's evidence: %+v", a.Why)
	}
	conv := readLaunchConversation(t, e.state, node)
	if !strings.HasPrefix(conv, "ses_") {
		t.Fatalf("conversation %q is not an OpenCode session id", conv)
	}

	// Deny, with a reason that reaches the model.
	m1, m2 := filepath.Join(work, "m1"), filepath.Join(work, "m2")
	e.typeAndEnter(node, "please create "+m1, opencodeRequests(fake))
	d := e.waitDialog(node, 120*time.Second)
	if d.Kind != "permission" || d.Tool != "bash" || !strings.Contains(d.Title, "touch "+m1) {
		t.Fatalf("dialog %+v", d)
	}
	if a := e.whyOf(node); a.State != tools.AgentWaiting || !a.NeedsHuman {
		t.Fatalf("with its dialog open: %+v", a)
	}
	e.must(e.ts, "answer", d.ID, "deny", "--reason", "not today")
	testenv.Eventually(t, 120*time.Second, func() bool {
		return slices.ContainsFunc(fake.Requests(), func(r *fakemodel.Request) bool {
			return strings.Contains(messageText(r.Messages[len(r.Messages)-1]), "not today")
		})
	}, testenv.Msg("the model was not told the human's reason"))
	e.waitState(node, 120*time.Second, tools.AgentIdle)
	if _, err := os.Stat(m1); err == nil {
		t.Fatalf("%s exists: the denied command ran", m1)
	}

	// Allow: the command runs.
	e.typeAndEnter(node, "please create "+m2, opencodeRequests(fake))
	d = e.waitDialog(node, 120*time.Second)
	e.must(e.ts, "answer", d.ID, "allow")
	waitExists(t, m2)
	e.waitWhy(node, 120*time.Second, "idle after the allowed command", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentIdle && len(a.Why) > 0 && a.Why[0].Event == "Stop"
	})

	// An interrupted turn (Esc twice, OpenCode's interrupt): its
	// session.error MessageAbortedError, within 10 s.
	sent := len(fake.Requests())
	e.typeAndEnter(node, "please be slow", opencodeRequests(fake))
	e.waitState(node, 60*time.Second, tools.AgentWorking)
	waitFakeRequest(t, func() int { return len(fake.Requests()) }, sent+1)
	// Two Esc bytes at once read as one Alt+Esc: the second after
	// OpenCode asks for it.
	e.must(e.ctl, "--session", e.oper, "call", "terminal_press", `{"terminal":"`+node+`","keys":"Escape"}`)
	e.waitScreen(node, "again to interrupt")
	e.must(e.ctl, "--session", e.oper, "call", "terminal_press", `{"terminal":"`+node+`","keys":"Escape"}`)
	pressed := time.Now()
	e.waitWhy(node, 10*time.Second, "idle after Esc Esc", func(a tools.AgentInfo) bool {
		// The interrupt's Stop, maybe followed by session.idle's (no
		// earlier turn was interrupted).
		return a.State == tools.AgentIdle && slices.ContainsFunc(a.Why, func(w tools.Evidence) bool {
			return w.Event == "Stop" && strings.Contains(w.Detail, "interrupted")
		})
	})
	t.Logf("the interrupt seen after %v", time.Since(pressed).Round(time.Millisecond))

	// A failed turn (HTTP 500): error, from session.error or OpenCode's
	// retry status.
	e.typeAndEnter(node, "please fail", opencodeRequests(fake))
	a = e.waitWhy(node, 120*time.Second, "error after the HTTP 500", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentError && len(a.Why) > 0 && a.Why[0].Event == "StopFailure"
	})
	t.Logf("the failed turn: %+v", a.Why[0])
	user.assertSame(t, "after the turns")

	// Restore after its tmux server is killed: the same session.
	e.down(up)
	if _, err := e.tmux.Cmd("kill-server"); err != nil {
		t.Fatal(err)
	}
	up2, _ := e.up()
	defer e.down(up2)
	if out := e.must(e.ts, "restore", node); !strings.Contains(out, "resuming opencode's conversation "+conv) {
		t.Fatalf("restore: %s", out)
	}
	e.assertArgv(node, []string{"opencode"}, []string{"--session", conv})
	e.waitWhy(node, 120*time.Second, "idle after the restore", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentIdle && hasEvidence(a, tools.SourceHook, "SessionStart")
	})
	e.waitScreen(node, "Build · stand-in")
	before := len(fake.Requests())
	e.typeAndEnter(node, "what did I say", opencodeRequests(fake))
	testenv.Eventually(t, 120*time.Second, func() bool {
		rs := fake.Requests()
		return len(rs) > before && slices.ContainsFunc(rs[before:], func(r *fakemodel.Request) bool {
			return r.HasTool("bash") && len(r.Messages) > 1 && strings.Contains(messageText(r.Messages[0]), "please say hi")
		})
	}, testenv.Msg("the resumed OpenCode did not carry the earlier conversation"))
	e.must(e.ts, "kill", node)
	user.assertSame(t, "after the close")
}

// runVersion runs `PROGRAM --version` (bounded) with HOME set to home
// and returns its output.
func runVersion(program, home string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, "--version")
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_DATA_HOME="+home, "XDG_CACHE_HOME="+home, "XDG_STATE_HOME="+home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// waitScreen waits until node's screen shows text.
func (e *e2e) waitScreen(node, text string) {
	e.t.Helper()
	testenv.Eventually(e.t, 120*time.Second, func() bool { return strings.Contains(e.nodeScreen(node), text) },
		func() string { return fmt.Sprintf("%s never showed %q:\n%s", node, text, e.nodeScreen(node)) })
}

// opencodeRequests counts the stand-in's requests (a prompt is submitted
// once one more arrived).
func opencodeRequests(fake *fakemodel.Server) func() int {
	return func() int { return len(fake.Requests()) }
}
