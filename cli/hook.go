package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/internal/ctllite"
	"github.com/termsprawl/termsprawl/tools"
)

// termsprawlctl hook KIND EVENT: the command an agent's own hooks run
// (termsprawl writes them into the settings it passes the agent, see
// orchestrator/toolserver/agentwire.go). It reads the agent's hook JSON
// (stdin; for codex, the notify argument), turns permission requests into
// dialogs a human answers in termsprawl and state events into
// agent_report, and answers in the agent's own hook format. Whatever goes
// wrong, a permission is never allowed: it is denied the way the agent's
// hook rules say (Claude Code: exit 2 with the reason on stderr).

// ctlHook is `termsprawlctl hook KIND EVENT [PAYLOAD]`.
type ctlHook struct {
	Agent   string `arg:"" name:"KIND" enum:"claude,codex,gemini,opencode" help:"The agent whose hook this is: claude, codex, gemini or opencode (termsprawl's OpenCode plugin)."`
	Event   string `arg:"" name:"EVENT" help:"The hook event (claude: SessionStart, UserPromptSubmit, PermissionRequest, Notification, Stop, StopFailure; gemini: SessionStart, BeforeAgent, AfterAgent, Notification, BeforeTool; codex: SessionStart, UserPromptSubmit, PermissionRequest, Stop, and notify; opencode: SessionStart, UserPromptSubmit, PermissionRequest, Stop, StopFailure)."`
	Payload string `arg:"" optional:"" name:"PAYLOAD" help:"codex notify passes its JSON as this argument; the others read stdin."`
	// DialogTimeout is how long a permission dialog stays open.
	DialogTimeout time.Duration `name:"dialog-timeout" placeholder:"DURATION" env:"TERMSPRAWL_HOOK_DIALOG_TIMEOUT" help:"How long a permission dialog waits for a human before it ends as a deny (default and max 10m)."`
}

func (ctlHook) Examples() string {
	return `termsprawlctl hook claude PermissionRequest < input.json   # Claude Code's hook JSON on stdin
termsprawlctl hook codex notify '{"type":"agent-turn-complete","last-assistant-message":"done"}'`
}

// hookWaitMS is one bounded wait on a dialog (a variable so tests can
// make the repeated waits short).
var hookWaitMS = int(tools.MaxWaitTimeout / time.Millisecond)

// maxTitleInput bounds the summary of a tool's input in a dialog title.
const maxTitleInput = 200

// The events each agent's hook knows and the agent state each reports
// ("" for the permission event), and the hook JSON: shared with the lite
// termsprawlctl (internal/ctllite), which answers the state events itself.
var (
	claudeStates = ctllite.ClaudeStates
	geminiStates = ctllite.GeminiStates
	codexStates  = ctllite.CodexStates
	// termsprawl's OpenCode plugin speaks Claude Code's hook JSON.
	opencodeStates = ctllite.OpencodeStates
)

// hookInput is the part of an agent's hook JSON the hook reads.
type hookInput = ctllite.HookInput

// hookRun is one run of the hook.
type hookRun struct {
	ctx     context.Context
	g       ctlHook
	session string
	stdout  io.Writer
	stderr  io.Writer
}

func (h *hookRun) say(format string, a ...any) {
	fmt.Fprintf(h.stderr, "%s hook %s %s: %s\n", ctlName, h.g.Agent, h.g.Event, fmt.Sprintf(format, a...))
}

// runHook runs `termsprawlctl hook` and returns its exit code in the
// agent's terms.
func runHook(ctx context.Context, g ctlHook, session string, stdin io.Reader, stdout, stderr io.Writer) int {
	h := &hookRun{ctx: ctx, g: g, session: session, stdout: stdout, stderr: stderr}
	switch g.Agent {
	case "claude":
		return h.claude(stdin, claudeStates, "Claude Code")
	case "codex":
		if g.Event != "notify" {
			// Codex's hooks take Claude Code's JSON and answers.
			return h.claude(stdin, codexStates, "Codex")
		}
		return h.codex()
	case "gemini":
		return h.gemini(stdin)
	case "opencode":
		return h.claude(stdin, opencodeStates, "OpenCode")
	default:
		return h.codex()
	}
}

// readHookJSON reads and decodes the hook JSON.
func readHookJSON(r io.Reader) (hookInput, error) {
	b, err := ctllite.ReadHookInput(r)
	if err != nil {
		return hookInput{}, err
	}
	return ctllite.ParseHookInput(b)
}

// claude handles Claude Code's hooks. Exit codes are Claude Code's: 0
// with JSON on stdout, 2 blocks (for PermissionRequest: deny, stderr is
// the reason), anything else is a non-blocking error shown to the user.
func (h *hookRun) claude(stdin io.Reader, states map[string]string, program string) int {
	in, err := readHookJSON(stdin)
	permission := h.g.Event == "PermissionRequest" || in.Event == "PermissionRequest"
	if err != nil {
		if permission {
			h.say("%v: denied (termsprawl never allows what it cannot read)", err)
			return 2
		}
		h.say("%v: nothing reported", err)
		return 1
	}
	if in.Event != "" && in.Event != h.g.Event {
		if permission {
			h.say("the input is for event %q but the hook was registered for %q: denied", in.Event, h.g.Event)
			return 2
		}
		h.say("the input is for event %q but the hook was registered for %q: nothing reported", in.Event, h.g.Event)
		return 1
	}
	if _, known := states[h.g.Event]; !known {
		h.say("unknown %s event %q: termsprawl handles %s; nothing reported or allowed", program, h.g.Event, knownEvents(states))
		return 1
	}
	if permission {
		return h.claudePermission(in)
	}
	msg := ctllite.ClaudeMessage(h.g.Event, in)
	// An idle prompt's notification and an interrupt are not a human
	// needed nor a failed turn (CONTRACT §20).
	var state string
	h.g.Event, state = ctllite.ClaudeEvent(h.g.Event, in)
	return h.report(state, msg, in.Conversation())
}

func knownEvents(m map[string]string) string { return ctllite.KnownEvents(m) }

// report calls agent_report, with the agent's conversation id when its
// hook JSON carried one (kept for a restore, CONTRACT §25); 0 on
// success, 1 (non-blocking for every agent) otherwise.
func (h *hookRun) report(state, message, conversation string) int {
	if bad := ctllite.BadConversation(conversation); bad != "" {
		h.say("%s", bad)
	}
	args := ctllite.ReportArgs(h.g.Agent, h.g.Event, state, message, conversation)
	res := tools.Call(h.ctx, h.session, tools.Request{Operation: "agent_report", Args: args}, tools.CallOptions{})
	if !res.OK {
		h.say("agent_report %s failed: %s", state, res.Error)
		return 1
	}
	return 0
}

// claudePermission opens the dialog, waits for the human and prints the
// decision.
func (h *hookRun) claudePermission(in hookInput) int {
	if in.ToolName == "" {
		h.say("the PermissionRequest input has no tool_name: denied")
		return 2
	}
	title := permissionTitle(in.ToolName, in.ToolInput)
	input := ""
	if len(bytes.TrimSpace(in.ToolInput)) > 0 {
		var err error
		if input, err = tools.CanonicalJSON(in.ToolInput); err != nil {
			h.say("the tool_input is not JSON (%v): denied", err)
			return 2
		}
	}
	if len(input) > tools.MaxStringBytes {
		h.say("the %s input is %d KiB, over the %d KiB termsprawl shows a human in full: denied", in.ToolName, len(input)>>10, tools.MaxStringBytes>>10)
		return 2
	}
	ask := permissionAsk{tool: in.ToolName, input: input, title: title, cwd: in.Cwd}
	out, err := h.askHuman(ask)
	if err != nil {
		h.say("%v: denied", err)
		return 2
	}
	decision := map[string]any{"behavior": "deny", "message": denyMessage(out)}
	if out.Answer.Mode == tools.AnswerAllow || out.Answer.Mode == tools.AnswerAlways {
		decision = map[string]any{"behavior": "allow"}
	}
	b, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PermissionRequest", "decision": decision}})
	fmt.Fprintln(h.stdout, string(b))
	return 0
}

func denyMessage(out tools.DialogOutcome) string {
	reason := out.Answer.Reason
	if reason == "" {
		reason = "denied in termsprawl"
	}
	switch {
	case out.TimedOut:
		return "Permission denied: nobody answered in termsprawl in time (" + reason + ")"
	case out.DecidedBy == tools.DecidedByRule:
		return "Permission denied by a termsprawl policy: " + reason
	case out.DecidedBy == tools.DecidedByBudget:
		return "Permission denied by termsprawl: " + reason
	}
	if out.Ended || out.DecidedBy == tools.DecidedByClosed || reason == tools.DialogEndNodeClosed || reason == tools.DialogEndDownAll {
		return "Permission denied: nobody answered, " + reason
	}
	return "Permission denied by the human in termsprawl: " + reason
}

// permissionAsk is what a permission dialog asks: the tool and its full
// input (canonical JSON), and the title shown to humans; cwd is where
// the agent's shell is (the hook's cwd), for the policies.
type permissionAsk struct{ tool, input, title, cwd string }

// own is nil when out answers this very request: a dialog of kind
// permission for the same tool and the same full input. After a restart
// an id may name another request (termsprawl before this check handed
// ids out again); its answer is never taken for this one.
func (a permissionAsk) own(out tools.DialogOutcome) error {
	if out.Kind != "permission" || out.Tool != a.tool || out.Input != a.input {
		return fmt.Errorf("termsprawl answered dialog %s, which asks %s %q, not this %s request: not taken", out.Dialog, cmp.Or(out.Kind, "(no kind)"), oneLineText(cmp.Or(out.Tool, "(no tool)")+" "+out.Input, 120), a.tool)
	}
	return nil
}

// askHuman opens a permission dialog and waits for its end: repeated
// bounded waits on the same dialog, riding through an orchestrator
// restart (the dialog is kept on disk), never longer than the dialog's
// life and a margin. The answer is taken only if it is to this request
// (permissionAsk.own).
func (h *hookRun) askHuman(ask permissionAsk) (tools.DialogOutcome, error) {
	life := h.g.DialogTimeout
	if life <= 0 || life > tools.MaxDialogTimeout {
		life = tools.MaxDialogTimeout
	}
	deadline := time.Now().Add(life + 30*time.Second)
	// A hook never outlives its agent (CONTRACT §26): when the process
	// that ran it is gone (its node closed, tmux went away), the wait
	// ends and the dialog is withdrawn.
	ctx, stop := watchParent(h.ctx, parentPollEvery)
	defer stop()
	h = &hookRun{ctx: ctx, g: h.g, session: h.session, stdout: h.stdout, stderr: h.stderr}
	// The first call only opens the dialog (it returns at once with its
	// id), so that a restart of termsprawl during any later wait finds
	// the hook knowing which dialog to wait on again.
	what := map[string]any{"kind": "permission", "tool": ask.tool}
	if ask.input != "" {
		what["input"] = ask.input
	}
	open := map[string]any{"title": ask.title, "timeout_ms": life.Milliseconds(), "wait_ms": 1}
	if filepath.IsAbs(ask.cwd) && len(ask.cwd) <= tools.MaxStringBytes {
		open["cwd"] = ask.cwd
	}
	maps.Copy(open, what)
	args, _ := json.Marshal(open)
	res := tools.Call(h.ctx, h.session, tools.Request{Operation: "dialog_request", Args: args}, tools.CallOptions{})
	if !res.OK && res.Kind == tools.KindUnavailable {
		if errors.Is(res.Err(), tools.ErrNotRunning) {
			return tools.DialogOutcome{}, errors.New("termsprawl is not running (start it with `termsprawl up`), so no human can answer")
		}
		return tools.DialogOutcome{}, fmt.Errorf("termsprawl cannot be reached (%s), so no human can answer", res.Error)
	}
	id := ""
	for {
		if res.OK {
			var out tools.DialogOutcome
			if err := json.Unmarshal(res.Value, &out); err != nil {
				return out, fmt.Errorf("termsprawl's answer is not a dialog outcome: %w", err)
			}
			if err := ask.own(out); err != nil {
				return tools.DialogOutcome{}, err
			}
			return out, nil
		}
		if d, _ := res.Details["dialog"].(string); d != "" {
			id = d
		}
		switch {
		case id == "":
			return tools.DialogOutcome{}, fmt.Errorf("termsprawl refused the dialog: %s", res.Error)
		case res.Kind == tools.KindTimeout, res.Kind == tools.KindUnavailable:
			// Still open, or termsprawl is restarting: wait again.
		default:
			return tools.DialogOutcome{}, fmt.Errorf("waiting on dialog %s failed: %s", id, res.Error)
		}
		if h.ctx.Err() != nil {
			h.withdraw(id)
			return tools.DialogOutcome{}, fmt.Errorf("the agent stopped the hook while dialog %s was open", id)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return tools.DialogOutcome{}, fmt.Errorf("dialog %s got no answer in time (last: %s)", id, res.Error)
		}
		wait := map[string]any{"dialog": id, "wait_ms": min(hookWaitMS, int(left.Milliseconds())+1)}
		maps.Copy(wait, what)
		wargs, _ := json.Marshal(wait)
		res = tools.Call(h.ctx, h.session, tools.Request{Operation: "dialog_request", Args: wargs}, tools.CallOptions{Wait: left})
	}
}

// parentPollEvery is how often a waiting hook looks whether its parent
// (the agent) is still there.
var parentPollEvery = 500 * time.Millisecond

// watchParent returns a context that ends when ctx does or when this
// process's parent changes (it died: the process was given to init or a
// subreaper). stop ends the watch; the goroutine ends with it.
func watchParent(ctx context.Context, every time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	parent := os.Getppid()
	go func() { // owner: askHuman, ended by stop
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if os.Getppid() != parent {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, cancel
}

// withdraw ends a dialog nobody needs any more (the agent stopped the
// hook, e.g. because the human answered in the agent's own window), so it
// does not linger in termsprawl dialogs: as a deny, the only answer an
// agent may give.
func (h *hookRun) withdraw(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	args, _ := json.Marshal(map[string]any{"dialog": id, "mode": tools.AnswerDeny, "reason": "the agent stopped asking (answered in its own window, or interrupted)"})
	if res := tools.Call(ctx, h.session, tools.Request{Operation: "dialog_answer", Args: args}, tools.CallOptions{}); !res.OK {
		h.say("withdraw dialog %s: %s", id, res.Error)
	}
}

// permissionTitle is "TOOL: summary of its input", bounded.
func permissionTitle(tool string, input json.RawMessage) string {
	var m map[string]any
	summary := ""
	if json.Unmarshal(input, &m) == nil {
		for _, k := range []string{"command", "file_path", "path", "url", "pattern", "query", "prompt"} {
			if s, ok := m[k].(string); ok && s != "" {
				summary = s
				break
			}
		}
	}
	if summary == "" && len(input) > 0 && string(input) != "null" {
		var compact bytes.Buffer
		if json.Compact(&compact, input) == nil {
			summary = compact.String()
		}
	}
	if summary == "" {
		return oneLineText(tool, maxTitleInput)
	}
	// Cut in the middle: the end of a long command (`…; rm -rf ~/work`)
	// is what a human must see (CONTRACT §26).
	return oneLineText(tool, maxTitleInput) + ": " + cutMiddle(strings.Join(strings.Fields(summary), " "), maxTitleInput)
}

// oneLineText squeezes whitespace and cuts s to max runes.
func oneLineText(s string, max int) string { return ctllite.OneLineText(s, max) }

// gemini handles Gemini CLI's hooks: JSON on stdout, exit 0; a failure
// is exit 1, a warning that blocks nothing. BeforeTool (registered for
// the tools Gemini CLI confirms) is the permission gate: a termsprawl
// dialog whose deny blocks the tool with the human's reason (exit 2 when
// anything goes wrong: the tool is blocked). An allow lets the tool on to
// Gemini CLI's own policy, which may still ask in its window: its hooks
// cannot grant a permission (docs/CHOICES.md).
func (h *hookRun) gemini(stdin io.Reader) int {
	in, err := readHookJSON(stdin)
	permission := h.g.Event == "BeforeTool"
	if err != nil {
		if permission {
			h.say("%v: blocked (termsprawl never allows what it cannot read)", err)
			return 2
		}
		h.say("%v: nothing reported", err)
		return 1
	}
	state, known := geminiStates[h.g.Event]
	if !known || (in.Event != "" && in.Event != h.g.Event) {
		h.say("unknown or mismatched Gemini CLI event %q (input says %q): termsprawl handles %s; nothing reported", h.g.Event, in.Event, knownEvents(geminiStates))
		if permission {
			return 2
		}
		return 1
	}
	if permission {
		return h.geminiPermission(in)
	}
	code := h.report(state, ctllite.GeminiMessage(h.g.Event, in), in.Conversation())
	fmt.Fprintln(h.stdout, "{}")
	return code
}

// geminiPermission opens the dialog for a BeforeTool and answers in
// Gemini CLI's terms.
func (h *hookRun) geminiPermission(in hookInput) int {
	if in.ToolName == "" {
		h.say("the BeforeTool input has no tool_name: blocked")
		return 2
	}
	input := ""
	if len(bytes.TrimSpace(in.ToolInput)) > 0 {
		var err error
		if input, err = tools.CanonicalJSON(in.ToolInput); err != nil {
			h.say("the tool_input is not JSON (%v): blocked", err)
			return 2
		}
	}
	if len(input) > tools.MaxStringBytes {
		h.say("the %s input is %d KiB, over the %d KiB termsprawl shows a human in full: blocked", in.ToolName, len(input)>>10, tools.MaxStringBytes>>10)
		return 2
	}
	out, err := h.askHuman(permissionAsk{tool: in.ToolName, input: input, title: permissionTitle(in.ToolName, in.ToolInput), cwd: in.Cwd})
	if err != nil {
		h.say("%v: blocked", err)
		return 2
	}
	answer := map[string]any{"decision": "deny", "reason": denyMessage(out)}
	if out.Answer.Mode == tools.AnswerAllow || out.Answer.Mode == tools.AnswerAlways {
		answer = map[string]any{"decision": "allow"}
	}
	b, _ := json.Marshal(answer)
	fmt.Fprintln(h.stdout, string(b))
	return 0
}

// codex handles Codex's notify program call: the JSON is the last
// argument; Codex ignores the exit code, so failures go to stderr.
func (h *hookRun) codex() int {
	if h.g.Event != "notify" {
		h.say("unknown Codex hook %q: termsprawl handles notify", h.g.Event)
		return 1
	}
	in, err := readHookJSON(strings.NewReader(h.g.Payload))
	if err != nil {
		h.say("%v: nothing reported", err)
		return 1
	}
	if in.Type != "agent-turn-complete" {
		h.say("unknown Codex notification type %q: termsprawl handles agent-turn-complete; nothing reported", in.Type)
		return 1
	}
	return h.report(tools.AgentIdle, in.LastAssistantMsg, in.Conversation())
}

// hookSessionMissing answers a hook that has no session: a permission is
// denied (never allowed), anything else is a non-blocking error.
func hookSessionMissing(g ctlHook, stderr io.Writer) int {
	fmt.Fprintf(stderr, "%s hook %s %s: %s: no termsprawl session, so no human can answer here\n", ctlName, g.Agent, g.Event, MissingSessionMessage)
	if ctllite.IsPermissionHook(g.Agent, g.Event) {
		return 2
	}
	return 1
}
