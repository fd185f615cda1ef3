package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/termsprawl/termsprawl/tools"
)

// runCtlIn runs MainCtl with stdin.
func runCtlIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := MainCtl(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

const permissionInput = `{"session_id":"s","cwd":"/tmp","permission_mode":"default","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"touch /tmp/x","description":"make x"},"permission_suggestions":[]}`

// permissionInputCanon is permissionInput's tool_input as the hook sends it.
const permissionInputCanon = `{"command":"touch /tmp/x","description":"make x"}`

// ownOutcome is an outcome of the dialog permissionInput opens.
func ownOutcome(o tools.DialogOutcome) tools.DialogOutcome {
	o.Kind, o.Tool, o.Input = "permission", "Bash", permissionInputCanon
	return o
}

// hookDecision decodes Claude Code's PermissionRequest answer.
func hookDecision(t *testing.T, stdout string) (behavior, message string) {
	t.Helper()
	var v struct {
		HookSpecificOutput struct {
			HookEventName string `json:"hookEventName"`
			Decision      struct {
				Behavior string `json:"behavior"`
				Message  string `json:"message"`
			} `json:"decision"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || v.HookSpecificOutput.HookEventName != "PermissionRequest" {
		t.Fatalf("not a PermissionRequest answer (%v): %q", err, stdout)
	}
	return v.HookSpecificOutput.Decision.Behavior, v.HookSpecificOutput.Decision.Message
}

// Bad hook input: a clear stderr line and the agent's safe default, never
// an allow, and nothing sent to termsprawl.
func TestHookBadInput(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		return tools.OKResult(tools.DialogOutcome{Dialog: "dialog-1", Answer: tools.DialogAnswer{Mode: "allow"}})
	})
	cases := []struct {
		name, agent, event, stdin string
		code                      int
		stderr                    string
	}{
		{"truncated permission", "claude", "PermissionRequest", permissionInput[:60], 2, "not valid JSON"},
		{"garbage permission", "claude", "PermissionRequest", "yes please", 2, "not valid JSON"},
		{"empty permission", "claude", "PermissionRequest", "", 2, "empty"},
		{"two values", "claude", "PermissionRequest", permissionInput + permissionInput, 2, "more than one JSON value"},
		{"no tool name", "claude", "PermissionRequest", `{"hook_event_name":"PermissionRequest"}`, 2, "no tool_name"},
		{"event mismatch", "claude", "PermissionRequest", `{"hook_event_name":"Stop"}`, 2, "registered for"},
		{"permission in another event's hook", "claude", "Stop", permissionInput, 2, "registered for"},
		{"unknown event", "claude", "PostToolUse", `{"hook_event_name":"PostToolUse","tool_name":"Bash"}`, 1, "unknown Claude Code event"},
		{"truncated state", "claude", "Stop", `{"hook_event_name":"St`, 1, "not valid JSON"},
		{"gemini garbage", "gemini", "BeforeAgent", "{{", 1, "not valid JSON"},
		{"gemini unknown", "gemini", "AfterTool", `{"hook_event_name":"AfterTool"}`, 1, "unknown or mismatched"},
		// Gemini CLI's BeforeTool is its permission gate: unreadable is blocked.
		{"gemini gate without a tool", "gemini", "BeforeTool", `{"hook_event_name":"BeforeTool"}`, 2, "no tool_name: blocked"},
		{"gemini gate garbage", "gemini", "BeforeTool", "{{", 2, "blocked"},
		{"gemini gate mismatch", "gemini", "BeforeTool", `{"hook_event_name":"AfterAgent"}`, 2, "unknown or mismatched"},
		{"codex garbage", "codex", "notify", "", 1, "empty"},
		{"codex unknown type", "codex", "notify", `{"type":"approval-requested"}`, 1, "unknown Codex notification type"},
		{"codex unknown hook", "codex", "PostToolUse", `{"hook_event_name":"PostToolUse"}`, 1, "unknown Codex event"},
		// Codex's PermissionRequest takes Claude Code's path: never allowed unread.
		{"codex empty permission", "codex", "PermissionRequest", "", 2, "empty"},
		{"codex permission without a tool", "codex", "PermissionRequest", `{"hook_event_name":"PermissionRequest"}`, 2, "no tool_name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(fs.Backend.Calls())
			args := []string{"--session", fs.Agent, "hook", c.agent, c.event}
			stdin := c.stdin
			if c.agent == "codex" && c.event == "notify" {
				args, stdin = append(args, c.stdin), ""
			}
			code, out, errb := runCtlIn(t, stdin, args...)
			if code != c.code || !strings.Contains(errb, c.stderr) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, c.code, errb, c.stderr)
			}
			if strings.Contains(out, "allow") {
				t.Fatalf("bad input was allowed: %q", out)
			}
			if n := len(fs.Backend.Calls()) - before; n != 0 {
				t.Fatalf("bad input reached termsprawl (%d calls)", n)
			}
			if lines := strings.Count(strings.TrimSpace(errb), "\n"); lines != 0 || !strings.HasPrefix(errb, "termsprawlctl hook "+c.agent) {
				t.Fatalf("want one stderr line naming the hook, got %q", errb)
			}
		})
	}
}

// A permission request opens a dialog titled with the tool and its
// input, waits again on the SAME dialog while the human has not
// answered, and prints Claude Code's decision with the human's reason.
func TestHookClaudePermission(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	for _, c := range []struct {
		mode, behavior, msg string
	}{
		{"deny", "deny", "not on a Friday"},
		{"allow", "allow", ""},
		{"always", "allow", ""},
	} {
		t.Run(c.mode, func(t *testing.T) {
			waits := 0
			fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
				var a struct {
					Dialog string `json:"dialog"`
				}
				_ = json.Unmarshal(args, &a)
				if op != "dialog_request" {
					return tools.ErrResult(tools.Errorf(tools.KindUsage, "unexpected %s", op))
				}
				waits++
				if waits < 3 {
					return tools.ErrResult(tools.Errorf(tools.KindTimeout, "still waiting").WithDetails("dialog", "dialog-7").WithDetails("open", true))
				}
				return tools.OKResult(ownOutcome(tools.DialogOutcome{Dialog: "dialog-7", Answer: tools.DialogAnswer{Mode: c.mode, Reason: c.msg}}))
			})
			before := len(fs.Backend.Calls())
			code, out, errb := runCtlIn(t, permissionInput, "--session", fs.Agent, "hook", "claude", "PermissionRequest")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errb)
			}
			behavior, msg := hookDecision(t, out)
			if behavior != c.behavior || (c.msg != "" && !strings.Contains(msg, c.msg)) {
				t.Fatalf("decision %s %q", behavior, msg)
			}
			calls := fs.Backend.Calls()[before:]
			if len(calls) != 3 {
				t.Fatalf("calls %+v", calls)
			}
			var first struct {
				Kind, Title, Tool, Input string
				TimeoutMS                int `json:"timeout_ms"`
			}
			_ = json.Unmarshal(calls[0].Args, &first)
			if first.Kind != "permission" || first.Title != "Bash: touch /tmp/x" || first.TimeoutMS != int(tools.MaxDialogTimeout.Milliseconds()) ||
				first.Tool != "Bash" || first.Input != permissionInputCanon {
				t.Fatalf("dialog opened with %s", calls[0].Args)
			}
			if !strings.Contains(string(calls[0].Args), `"wait_ms":1`) {
				t.Fatalf("the first call should only open the dialog: %s", calls[0].Args)
			}
			for _, c := range calls[1:] {
				if !strings.Contains(string(c.Args), `"dialog":"dialog-7"`) || strings.Contains(string(c.Args), `"title"`) {
					t.Fatalf("a repeated wait must name the same dialog and open no new one: %s", c.Args)
				}
			}
		})
	}
}

// A timed-out dialog is a deny; termsprawl not running is a deny (exit 2
// with the reason, Claude Code's rule for a blocking hook); a dialog
// --dialog-timeout shortens is passed on.
func TestHookClaudeDenials(t *testing.T) {
	fs := newFakeState(t)
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		return tools.OKResult(ownOutcome(tools.DialogOutcome{Dialog: "dialog-1", TimedOut: true, Answer: tools.DialogAnswer{Mode: "deny", Reason: "nobody answered"}}))
	})
	code, out, errb := runCtlIn(t, permissionInput, "--session", fs.Agent, "hook", "claude", "PermissionRequest", "--dialog-timeout", "2s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if b, msg := hookDecision(t, out); b != "deny" || !strings.Contains(msg, "nobody answered in termsprawl in time") {
		t.Fatalf("timed out: %s %q", b, msg)
	}
	calls := fs.Backend.Calls()
	if !strings.Contains(string(calls[len(calls)-1].Args), `"timeout_ms":2000`) {
		t.Fatalf("--dialog-timeout not passed: %s", calls[len(calls)-1].Args)
	}

	fs.RemoveEndpoint(t)
	code, out, errb = runCtlIn(t, permissionInput, "--session", fs.Agent, "hook", "claude", "PermissionRequest")
	if code != 2 || out != "" || !strings.Contains(errb, "not running") || !strings.Contains(errb, "denied") {
		t.Fatalf("orchestrator down: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	// State hooks while it is down: a non-blocking error, nothing blocked.
	code, _, errb = runCtlIn(t, `{"hook_event_name":"Stop"}`, "--session", fs.Agent, "hook", "claude", "Stop")
	if code != 1 || !strings.Contains(errb, "agent_report idle failed") {
		t.Fatalf("state hook, orchestrator down: exit %d, %q", code, errb)
	}
	// No session at all.
	t.Setenv(SessionEnv, "")
	t.Setenv("TERMSPRAWL_HOME", t.TempDir())
	code, out, errb = runCtlIn(t, permissionInput, "hook", "claude", "PermissionRequest")
	if code != 2 || out != "" || !strings.Contains(errb, "no human can answer") {
		t.Fatalf("no session: exit %d, %q, %q", code, out, errb)
	}
}

// State hooks report the agent's state.
func TestHookStates(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	cases := []struct {
		agent, event, input, state, msg, stdout string
	}{
		{"claude", "SessionStart", `{"hook_event_name":"SessionStart","source":"startup"}`, "idle", "", ""},
		{"claude", "UserPromptSubmit", `{"hook_event_name":"UserPromptSubmit","prompt":"fix the build"}`, "working", "prompt: fix the build", ""},
		{"claude", "Notification", `{"hook_event_name":"Notification","message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}`, "waiting", "Claude needs your permission to use Bash", ""},
		{"claude", "Stop", `{"hook_event_name":"Stop","stop_hook_active":false}`, "idle", "", ""},
		// The idle prompt's notification is not a human needed (issue 39).
		{"claude", "Notification", `{"hook_event_name":"Notification","message":"Claude is waiting for your input","notification_type":"idle_prompt"}`, "idle", "Claude is waiting for your input", ""},
		{"claude", "Notification", `{"hook_event_name":"Notification","message":"Claude is waiting for your input"}`, "idle", "Claude is waiting for your input", ""},
		// Esc aborts the request: the turn ended, it did not fail.
		{"claude", "StopFailure", `{"hook_event_name":"StopFailure","error":"Request was aborted."}`, "idle", "the turn was interrupted: Request was aborted.", ""},
		{"claude", "StopFailure", `{"hook_event_name":"StopFailure","error":"rate_limit","error_details":"429 Too Many Requests"}`, "error", "the turn failed: rate_limit 429 Too Many Requests", ""},
		{"gemini", "BeforeAgent", `{"hook_event_name":"BeforeAgent","prompt":"hello"}`, "working", "prompt: hello", "{}\n"},
		{"gemini", "AfterAgent", `{"hook_event_name":"AfterAgent","prompt":"hello","prompt_response":"hi"}`, "idle", "", "{}\n"},
		{"gemini", "Notification", `{"hook_event_name":"Notification","notification_type":"ToolPermission","message":"run_shell_command wants to run"}`, "waiting", "run_shell_command wants to run", "{}\n"},
		{"codex", "notify", `{"type":"agent-turn-complete","thread-id":"t","last-assistant-message":"All tests pass."}`, "idle", "All tests pass.", ""},
	}
	for _, c := range cases {
		t.Run(c.agent+"-"+c.event, func(t *testing.T) {
			before := len(fs.Backend.Calls())
			args := []string{"--session", fs.Agent, "hook", c.agent, c.event}
			stdin := c.input
			if c.agent == "codex" {
				args, stdin = append(args, c.input), ""
			}
			code, out, errb := runCtlIn(t, stdin, args...)
			if code != 0 || out != c.stdout {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errb)
			}
			calls := fs.Backend.Calls()[before:]
			if len(calls) != 1 || calls[0].Op != "agent_report" {
				t.Fatalf("calls %+v", calls)
			}
			var a struct{ State, Message, Event string }
			_ = json.Unmarshal(calls[0].Args, &a)
			if c.state == "idle" && c.event == "Notification" && a.Event != "IdleNotification" {
				t.Fatalf("an idle prompt's notification reported as %s", calls[0].Args)
			}
			if a.State != c.state || a.Message != c.msg {
				t.Fatalf("agent_report %s", calls[0].Args)
			}
		})
	}
}

func TestPermissionTitle(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 500)
	cases := []struct{ tool, input, want string }{
		{"Bash", `{"command":"go test ./...","description":"run tests"}`, "Bash: go test ./..."},
		{"Bash", `{"command":"echo a\n  echo b"}`, "Bash: echo a echo b"},
		{"Write", `{"file_path":"/src/main.go","content":"package main"}`, "Write: /src/main.go"},
		{"WebFetch", `{"url":"http://127.0.0.1/","prompt":"read"}`, "WebFetch: http://127.0.0.1/"},
		{"mcp__x__y", `{"a":1}`, `mcp__x__y: {"a":1}`},
		{"Task", `null`, "Task"},
		{"Bash", `{"command":"` + long + `"}`, "Bash: " + strings.Repeat("x", (maxTitleInput-1)/3) + "…" + strings.Repeat("x", maxTitleInput-1-(maxTitleInput-1)/3)},
		{"Bash", `{"command":"ls ` + long + ` ; rm -rf ~/work"}`, "Bash: ls " + strings.Repeat("x", (maxTitleInput-1)/3-3) + "…" + strings.Repeat("x", maxTitleInput-1-(maxTitleInput-1)/3-16) + " ; rm -rf ~/work"},
	}
	for _, c := range cases {
		if got := permissionTitle(c.tool, json.RawMessage(c.input)); got != c.want {
			t.Errorf("permissionTitle(%s, %s) = %q, want %q", c.tool, c.input, got, c.want)
		}
	}
}

// FuzzHookInput: whatever the agent sends, reading it never panics and a
// title stays one bounded line.
func FuzzHookInput(f *testing.F) {
	f.Add([]byte(permissionInput))
	f.Add([]byte(`{"hook_event_name":"Stop"}`))
	f.Add([]byte(`{"tool_name":"Bash","tool_input":{"command":"\u0000\n\t"}}`))
	f.Add([]byte(`{"tool_input":[1,2,3]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := readHookJSON(bytes.NewReader(data))
		if err != nil {
			return
		}
		title := permissionTitle(in.ToolName, in.ToolInput)
		if strings.ContainsAny(title, "\n\r") {
			t.Fatalf("title has a line break: %q", title)
		}
		if utf8.RuneCountInString(title) > utf8.RuneCountInString(in.ToolName)+2+maxTitleInput+len(in.ToolName) {
			t.Fatalf("title of %d runes", utf8.RuneCountInString(title))
		}
	})
}

// A hook the agent stops (SIGTERM: the human answered in the agent's own
// window) withdraws its dialog as a deny, so it does not linger.
func TestHookWithdrawsWhenStopped(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waits := 0
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		if op == "dialog_answer" {
			return tools.OKResult(map[string]any{})
		}
		waits++
		if waits == 2 {
			cancel()
		}
		return tools.ErrResult(tools.Errorf(tools.KindTimeout, "still waiting").WithDetails("dialog", "dialog-3").WithDetails("open", true))
	})
	var out, errb bytes.Buffer
	code := runHook(ctx, ctlHook{Agent: "claude", Event: "PermissionRequest"}, fs.Agent, strings.NewReader(permissionInput), &out, &errb)
	if code != 2 || strings.Contains(out.String(), "allow") || !strings.Contains(errb.String(), "stopped the hook") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	calls := fs.Backend.Calls()
	last := calls[len(calls)-1]
	if last.Op != "dialog_answer" || !strings.Contains(string(last.Args), `"dialog":"dialog-3"`) || !strings.Contains(string(last.Args), `"mode":"deny"`) {
		t.Fatalf("the dialog was not withdrawn: %+v", calls)
	}
}

// A hook waiting on its dialog takes no answer to another request: an
// outcome naming another tool, another input (even one that differs only
// in whitespace the title squeezes) or another kind is a deny, never an
// allow. (Before termsprawl checked, a restart handed the id out again
// and an allow of "Bash: ls" ran another request.)
func TestHookTakesOnlyItsOwnAnswer(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	for _, c := range []struct {
		name string
		out  tools.DialogOutcome
	}{
		{"another input", tools.DialogOutcome{Kind: "permission", Tool: "Bash", Input: `{"command":"ls"}`}},
		{"another tool", tools.DialogOutcome{Kind: "permission", Tool: "Write", Input: permissionInputCanon}},
		{"a question", tools.DialogOutcome{Kind: "question", Tool: "", Input: ""}},
		{"nothing said", tools.DialogOutcome{}},
		{"whitespace", tools.DialogOutcome{Kind: "permission", Tool: "Bash", Input: `{"command":"touch  /tmp/x","description":"make x"}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			waits := 0
			fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
				waits++
				if waits == 1 {
					return tools.ErrResult(tools.Errorf(tools.KindTimeout, "still waiting").WithDetails("dialog", "dialog-4").WithDetails("open", true))
				}
				out := c.out
				out.Dialog, out.Answer = "dialog-4", tools.DialogAnswer{Mode: "allow"}
				return tools.OKResult(out)
			})
			code, out, errb := runCtlIn(t, permissionInput, "--session", fs.Agent, "hook", "claude", "PermissionRequest")
			if code != 2 || strings.Contains(out, "allow") || !strings.Contains(errb, "not this Bash request") {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errb)
			}
			calls := fs.Backend.Calls()
			if last := calls[len(calls)-1]; !strings.Contains(string(last.Args), `"tool":"Bash"`) || !strings.Contains(string(last.Args), `"input":`) {
				t.Fatalf("a repeated wait should say what it asks, for termsprawl to check too: %s", last.Args)
			}
		})
	}
}

// A permission hook's deny says who decided: nobody when its dialog ended
// because its node closed or termsprawl went down --all (CONTRACT §26).
func TestDenyMessage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		out  tools.DialogOutcome
		want string
	}{
		{tools.DialogOutcome{Ended: true, DecidedBy: tools.DecidedByClosed, Answer: tools.DialogAnswer{Mode: tools.AnswerDeny, Reason: tools.DialogEndNodeClosed}}, "Permission denied: nobody answered, its node closed"},
		{tools.DialogOutcome{Ended: true, DecidedBy: tools.DecidedByClosed, Answer: tools.DialogAnswer{Mode: tools.AnswerDeny, Reason: tools.DialogEndDownAll}}, "Permission denied: nobody answered, " + tools.DialogEndDownAll},
		{tools.DialogOutcome{TimedOut: true, Answer: tools.DialogAnswer{Mode: tools.AnswerDeny, Reason: "x"}}, "Permission denied: nobody answered in termsprawl in time (x)"},
		{tools.DialogOutcome{DecidedBy: tools.DecidedByRule, Answer: tools.DialogAnswer{Mode: tools.AnswerDeny, Reason: "rule 2"}}, "Permission denied by a termsprawl policy: rule 2"},
		{tools.DialogOutcome{Answer: tools.DialogAnswer{Mode: tools.AnswerDeny}}, "Permission denied by the human in termsprawl: denied in termsprawl"},
	} {
		if got := denyMessage(c.out); got != c.want {
			t.Errorf("denyMessage(%+v) = %q, want %q", c.out, got, c.want)
		}
	}
}
