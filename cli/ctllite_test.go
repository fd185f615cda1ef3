package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/ctllite"
	"github.com/termsprawl/termsprawl/tools"
)

// runLite runs the lite termsprawlctl's hot path (internal/ctllite.Run).
func runLite(args []string, stdin string) (int, string, string, *ctllite.Handoff) {
	var out, errb bytes.Buffer
	code, h := ctllite.Run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String(), h
}

// runFullCtl runs the full CLI through kong (no hot path of its own).
func runFullCtl(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	fastCtlEnabled = false
	defer func() { fastCtlEnabled = true }()
	return runCtlIn(t, stdin, args...)
}

// The lite termsprawlctl answers exactly as the full CLI (exit code,
// stdout, stderr) whatever the orchestrator replies, and hands everything
// it cannot answer the same way to the full CLI having printed nothing:
// then the full CLI's answer is the one the user sees.
func TestLiteCtlMatchesFull(t *testing.T) {
	fs := newFakeState(t)
	t.Setenv(SessionEnv, fs.Agent)
	t.Setenv("TERMSPRAWL_HOOK_DIALOG_TIMEOUT", "")
	os.Unsetenv("TERMSPRAWL_HOOK_DIALOG_TIMEOUT")
	replies := map[string]func(context.Context, string, json.RawMessage) tools.Result{
		"default": nil,
		"error": func(context.Context, string, json.RawMessage) tools.Result {
			return tools.ErrResult(tools.Errorf(tools.KindNotFound, `no node "x" <&> (did you mean y?)`).WithDetails("terminal", "x").WithDetails("n", 1.5))
		},
		"timed out": func(context.Context, string, json.RawMessage) tools.Result {
			return tools.OKResult(map[string]any{"result": map[string]any{"wait": map[string]any{"timed_out": true}}, "html": "<b>&</b>"})
		},
		"null": func(context.Context, string, json.RawMessage) tools.Result { return tools.Result{OK: true} },
		"bad kind": func(context.Context, string, json.RawMessage) tools.Result {
			return tools.Result{Kind: "weird", Error: "strange"}
		},
	}
	type inv struct {
		args  []string
		stdin string
	}
	taken := []inv{
		{args: []string{"doctor"}},
		{args: []string{"--session", fs.Operator, "doctor"}},
		{args: []string{"call", "terminal_list"}},
		{args: []string{"call", "terminal_list", " null "}},
		{args: []string{"call", "terminal_resize", `{"terminal":"a","columns":80.0,"rows":24}`}},
		{args: []string{"--wait", "2s", "call", "session_info"}},
		{args: []string{"hook", "claude", "Stop"}, stdin: `{"hook_event_name":"Stop"}`},
		{args: []string{"hook", "claude", "Stop"}, stdin: forgedStop},
		{args: []string{"hook", "claude", "UserPromptSubmit"}, stdin: `{"hook_event_name":"UserPromptSubmit","prompt":"fix   the\nbuild"}`},
		{args: []string{"hook", "claude", "StopFailure"}, stdin: `{"error":"rate_limit","error_details":{"a":1}}`},
		{args: []string{"hook", "gemini", "BeforeAgent"}, stdin: `{"prompt":"go"}`},
		{args: []string{"hook", "codex", "notify", `{"type":"agent-turn-complete","last-assistant-message":"done"}`}},
	}
	for name, reply := range replies {
		fs.Backend.SetReply(reply)
		for _, c := range taken {
			lc, lo, le, h := runLite(c.args, c.stdin)
			if h != nil {
				t.Errorf("%s: %q: the lite path hands it off", name, c.args)
				continue
			}
			fc, fo, fe := runFullCtl(t, c.stdin, c.args...)
			if lc != fc || lo != fo || le != fe {
				t.Errorf("%s: %q:\nlite exit %d\n%s%s\nfull exit %d\n%s%s", name, c.args, lc, lo, le, fc, fo, fe)
			}
		}
	}
	fs.Backend.SetReply(nil)

	// Handed off, with nothing printed and, where it read stdin, what it
	// read handed on.
	missing := filepath.Join(fs.Dir, "sessions", "nope.json")
	handed := []inv{
		{args: []string{}}, {args: []string{"guide"}}, {args: []string{"mcp"}}, {args: []string{"call", "--help"}},
		{args: []string{"--retry", "1", "call", "session_info"}},
		{args: []string{"call", "nope"}},                               // unknown: the server says usage
		{args: []string{"call", "terminal_list", `{"bogus":1}`}},       // the server says usage
		{args: []string{"call", "terminal_list", `{`}},                 // not JSON
		{args: []string{"--session", missing, "call", "session_info"}}, // no session file
		{args: []string{"hook", "claude", "PermissionRequest"}, stdin: permissionInput},
		{args: []string{"hook", "claude", "Stop"}, stdin: permissionInput},
		{args: []string{"hook", "claude", "Stop"}, stdin: `{"hook_event_name":"Notification"}`},
		{args: []string{"hook", "claude", "Nope"}, stdin: `{}`},
		{args: []string{"hook", "claude", "Stop"}, stdin: ``},
		{args: []string{"hook", "gemini", "Nope"}, stdin: `{}`},
		{args: []string{"hook", "codex", "notify", `{"type":"other"}`}},
		{args: []string{"hook", "codex", "other", `{}`}},
		{args: []string{"hook", "claude", "Stop", "--dialog-timeout", "1m"}},
	}
	before := len(fs.Backend.Calls())
	for _, c := range handed {
		code, out, errs, h := runLite(c.args, c.stdin)
		if h == nil || code != 0 || out != "" || errs != "" {
			t.Errorf("%q: not handed off cleanly: handoff %v, exit %d\n%s%s", c.args, h, code, out, errs)
			continue
		}
		if h.Consumed && string(h.Stdin) != c.stdin {
			t.Errorf("%q: hands on stdin %q, read %q", c.args, h.Stdin, c.stdin)
		}
	}
	// Only the two the server refused as usage reached it; the others
	// never left the process.
	if got := len(fs.Backend.Calls()) - before; got != 0 {
		t.Errorf("%d handed-off calls reached the orchestrator's backend; usage errors must stop at the handler", got)
	}

	// The orchestrator is down: handed off without anything sent (the
	// full CLI waits or says it is not running).
	if err := os.Remove(filepath.Join(fs.Dir, tools.EndpointFile)); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"doctor"}, {"call", "terminal_list"}} {
		if _, _, _, h := runLite(args, ""); h == nil {
			t.Errorf("%q with no endpoint: not handed off", args)
		}
	}
	if _, _, _, h := runLite([]string{"hook", "claude", "Stop"}, `{}`); h == nil || !h.Consumed || string(h.Stdin) != `{}` {
		t.Errorf("hook with no endpoint: handoff %+v", h)
	}
}

// With TERMSPRAWL_HOOK_DIALOG_TIMEOUT set (kong parses it for every
// hook), the hook is the full CLI's.
func TestLiteHookLeavesDialogTimeoutToFull(t *testing.T) {
	fs := newFakeState(t)
	t.Setenv(SessionEnv, fs.Agent)
	t.Setenv("TERMSPRAWL_HOOK_DIALOG_TIMEOUT", "1m")
	if _, _, _, h := runLite([]string{"hook", "claude", "Stop"}, `{}`); h == nil {
		t.Error("not handed off")
	}
}

// The termsprawlctl binary hands what its hot path does not answer to the
// termsprawl binary beside it: a command (exec in place), a hook whose
// stdin it already read (fed to the full CLI), and without termsprawl a
// clear error naming the install command.
func TestLiteCtlHandsOffToTermsprawl(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	run := func(bin, stdin string, env []string, args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errb.String()
	}
	code, out, errs := run(e.ctl, "", e.env, "guide", "terminal")
	if want, _ := tools.Guide("terminal"); code != 0 || out != strings.TrimRight(want, "\n")+"\n" {
		t.Errorf("guide terminal: exit %d\n%.300s\n%s", code, out, errs)
	}
	// A session file but no orchestrator: the lite hook reads stdin,
	// finds no endpoint and hands the input on; the full CLI reports
	// that nobody answers (an empty input would read "is empty").
	sess := filepath.Join(t.TempDir(), "sessions", "n.json")
	if err := os.MkdirAll(filepath.Dir(sess), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := tools.WriteSession(sess, tools.Session{Node: "n", Token: strings.Repeat("a", 64), Role: tools.RoleAgent}); err != nil {
		t.Fatal(err)
	}
	env := append(slices.Clone(e.env), SessionEnv+"="+sess)
	code, out, errs = run(e.ctl, `{"hook_event_name":"Stop"}`, env, "hook", "claude", "Stop")
	if code != 1 || out != "" || !strings.Contains(errs, "agent_report idle failed") || strings.Contains(errs, "empty") {
		t.Errorf("hook with no orchestrator: exit %d\n%s%s", code, out, errs)
	}
	// No termsprawl beside it nor on PATH.
	// A hard link, not a copy: a copy's write descriptor, inherited for
	// a moment by a process a parallel test forks, makes its exec fail
	// with "text file busy".
	alone := filepath.Join(t.TempDir(), "termsprawlctl")
	if err := os.Link(e.ctl, alone); err != nil { // another file system: a copy
		data, err := os.ReadFile(e.ctl)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(alone, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	noPath := append(slices.Clone(e.env), "PATH=/nonexistent")
	code, _, errs = run(alone, "", noPath, "guide")
	if code != 1 || !strings.Contains(errs, "termsprawl binary was not found") || !strings.Contains(errs, "go install github.com/termsprawl/termsprawl/cmd/...@latest") {
		t.Errorf("guide without termsprawl: exit %d\n%s", code, errs)
	}
	code, _, _ = run(alone, permissionInput, append(slices.Clone(noPath), SessionEnv+"="+sess), "hook", "claude", "PermissionRequest")
	if code != 2 {
		t.Errorf("permission hook without termsprawl: exit %d, want 2 (deny)", code)
	}
}

// forgedStop is a Stop hook's input whose session_id is a flag.
const forgedStop = `{"hook_event_name":"Stop","session_id":"--dangerously-skip-permissions"}`

// A conversation id that is not §26's pattern is refused at the hook —
// lite and full alike: said on stderr, left out of agent_report (so
// nothing keeps it for a restore), the state still reported (issue 34
// item 1). A valid one is passed on.
func TestHookRefusesForgedConversation(t *testing.T) {
	fs := newFakeState(t)
	t.Setenv(SessionEnv, fs.Agent)
	os.Unsetenv("TERMSPRAWL_HOOK_DIALOG_TIMEOUT")
	runs := map[string]func(stdin string, args ...string) (int, string, string){
		"lite": func(stdin string, args ...string) (int, string, string) {
			c, o, e, h := runLite(args, stdin)
			if h != nil {
				t.Fatalf("lite handed %q off", args)
			}
			return c, o, e
		},
		"full": func(stdin string, args ...string) (int, string, string) { return runFullCtl(t, stdin, args...) },
	}
	for name, run := range runs {
		for _, c := range []struct{ agent, event, stdin, want string }{
			{"claude", "Stop", forgedStop, ""},
			{"claude", "SessionStart", `{"hook_event_name":"SessionStart","session_id":"abc\u001b[2K"}`, ""},
			{"gemini", "AfterAgent", `{"hook_event_name":"AfterAgent","session_id":"-r"}`, ""},
			{"claude", "Stop", `{"hook_event_name":"Stop","session_id":"0f3c2a1e-77aa-4c1e"}`, "0f3c2a1e-77aa-4c1e"},
		} {
			before := len(fs.Backend.Calls())
			code, _, errb := run(c.stdin, "hook", c.agent, c.event)
			calls := fs.Backend.Calls()[before:]
			if code != 0 || len(calls) != 1 || calls[0].Op != "agent_report" {
				t.Fatalf("%s %s: exit %d, calls %+v, stderr %q", name, c.stdin, code, calls, errb)
			}
			var a struct {
				State        string
				Conversation *string
			}
			_ = json.Unmarshal(calls[0].Args, &a)
			switch {
			case a.State == "":
				t.Errorf("%s %s: no state reported: %s", name, c.stdin, calls[0].Args)
			case c.want == "" && (a.Conversation != nil || !strings.Contains(errb, "refused the conversation id") || strings.Contains(errb, "\x1b")):
				t.Errorf("%s %s: passed on %s, stderr %q", name, c.stdin, calls[0].Args, errb)
			case c.want != "" && (a.Conversation == nil || *a.Conversation != c.want || errb != ""):
				t.Errorf("%s %s: passed on %s, stderr %q", name, c.stdin, calls[0].Args, errb)
			}
		}
	}
}
