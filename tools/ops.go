package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParamType is the type of one operation argument.
type ParamType string

// Argument types. TypeObject is a string→string map (e.g. env);
// TypeWaitObject is the nested `wait` argument of the input operations.
const (
	TypeString      ParamType = "string"
	TypeInteger     ParamType = "integer"
	TypeBoolean     ParamType = "boolean"
	TypeObject      ParamType = "object"
	TypeStringArray ParamType = "string_array"
	TypeWaitObject  ParamType = "wait_object"
	// TypeStruct is a strict nested object whose members are Fields;
	// TypeStructArray an array of such objects (see params.go).
	TypeStruct      ParamType = "struct"
	TypeStructArray ParamType = "struct_array"
	// TypeRawObject is any JSON object whose shape the operation checks
	// itself (semantic_publish's tree, see ops_semantic.go).
	TypeRawObject ParamType = "raw_object"
)

// Ranges and defaults the table documents (the orchestrator applies the
// defaults; the table enforces the ranges).
const (
	MinColumns = 2
	MaxColumns = 1000
	MinRows    = 2
	MaxRows    = 1000
	// DefaultQuietMs is the quiet period of wait=quiet without quiet_ms.
	DefaultQuietMs = 500
	// DefaultReadChars is terminal_read's max_chars default.
	DefaultReadChars = 8000
	// MaxReadChars is terminal_read's largest max_chars.
	MaxReadChars = 100000
	// MaxSnapshotScrollback is terminal_snapshot's largest scrollback_lines.
	MaxSnapshotScrollback = 10000
	// MaxNameBytes caps node and agent names.
	MaxNameBytes = 128
	// MaxIDBytes caps opaque ids (watch, task, dialog, message_id).
	MaxIDBytes = 128
)

// Wait modes of terminal_wait_for, watch_start and the nested wait object.
const (
	WaitText   = "text"
	WaitRegex  = "regex"
	WaitQuiet  = "quiet"
	WaitExit   = "exit"
	WaitRender = "render"
)

// Param is one argument of an operation.
type Param struct {
	Name        string
	Description string
	Type        ParamType
	Required    bool
	// Enum lists the allowed values of a string.
	Enum []string
	// Min and Max bound an integer (nil: unbounded on that side).
	Min, Max *int
	// MaxLen caps a string (each element and key/value of arrays and maps)
	// in bytes; 0 means MaxStringBytes.
	MaxLen int
	// NonEmpty: a string must not be empty, an array must have an element.
	NonEmpty bool
	// NodeID: a string must be a node id (ValidNodeID).
	NodeID bool
	// Conversation: a string must be a conversation id
	// (ParseConversationID, CONTRACT §26).
	Conversation bool
	// Fields are the members of a TypeStruct or TypeStructArray element;
	// MaxItems caps an array (0: no cap).
	Fields   []Param
	MaxItems int
}

// Annotations are the MCP tool hints, set explicitly on every operation.
type Annotations struct {
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
}

// Operation is one row of the table.
type Operation struct {
	Name        string
	Description string
	// Topic is the guide topic the operation is documented in.
	Topic  string
	Params []Param
	// Annotations are the MCP hints.
	Annotations Annotations
	// Mutation: the operation changes something, returns a receipt and
	// accepts the optional idempotency_key argument (already in Params).
	Mutation bool
	// Result is a zero value of the operation's value type (for
	// mutations: of the receipt's result); State, for mutations, of the
	// receipt's state. The output schema is generated from them.
	Result any
	State  any

	// check runs cross-argument rules after every argument passed.
	check func(op *Operation, fields map[string]json.RawMessage) error
}

// Param returns the named argument, or nil.
func (op *Operation) Param(name string) *Param {
	for i := range op.Params {
		if op.Params[i].Name == name {
			return &op.Params[i]
		}
	}
	return nil
}

// ParamNames lists the argument names in table order.
func (op *Operation) ParamNames() []string {
	names := make([]string, len(op.Params))
	for i, p := range op.Params {
		names[i] = p.Name
	}
	return names
}

func intPtr(i int) *int { return &i }

func strParam(name, desc string) Param {
	return Param{Name: name, Description: desc, Type: TypeString}
}

func intParam(name, desc string, lo, hi *int) Param {
	return Param{Name: name, Description: desc, Type: TypeInteger, Min: lo, Max: hi}
}

func required(p Param) Param { p.Required = true; return p }

func enumParam(name, desc string, values ...string) Param {
	return Param{Name: name, Description: desc, Type: TypeString, Enum: values}
}

var (
	paramTerminal = Param{Name: "terminal", Type: TypeString, Required: true, NonEmpty: true, MaxLen: MaxNameBytes,
		Description: "The terminal: its id, else its name when unique, else a unique id prefix (see terminal_list)."}
	paramWaitMode = Param{Name: "wait", Type: TypeString, Required: true,
		Enum:        []string{WaitText, WaitRegex, WaitQuiet, WaitExit, WaitRender},
		Description: "What to wait for: text (a substring appears), regex (a Go RE2 pattern matches), quiet (no output for quiet_ms), exit (the program exits), render (the screen changes)."}
	paramWaitText    = Param{Name: "text", Type: TypeString, NonEmpty: true, Description: "Substring to wait for (only with wait=text)."}
	paramWaitPattern = Param{Name: "pattern", Type: TypeString, NonEmpty: true, Description: "Go RE2 regular expression to wait for (only with wait=regex)."}
	paramQuietMs     = intParam("quiet_ms", fmt.Sprintf("Quiet period in milliseconds for wait=quiet (default %d).", DefaultQuietMs), intPtr(1), intPtr(int(MaxWaitTimeout.Milliseconds())))
	paramTimeoutMs   = intParam("timeout_ms", fmt.Sprintf("Give up after this many milliseconds (default %d, max %d); running out is error kind timeout with a screen excerpt.", DefaultWaitTimeout.Milliseconds(), MaxWaitTimeout.Milliseconds()), intPtr(0), intPtr(int(MaxWaitTimeout.Milliseconds())))
	paramAfter       = intParam("after", "Baseline revision: only output after it counts (default: the revision when the call starts). Pass result.revision of an input operation.", intPtr(0), nil)

	// waitObjectParams are the fields of the nested wait argument.
	waitObjectParams = []Param{paramWaitMode, paramWaitText, paramWaitPattern, paramQuietMs, paramTimeoutMs}

	paramInputWait = Param{Name: "wait", Type: TypeWaitObject,
		Description: "Optional: wait after sending, with this call's revision as baseline: {wait: text|regex|quiet|exit|render, text?, pattern?, quiet_ms?, timeout_ms?}. The result then carries result.wait."}

	paramIdempotencyKey = Param{Name: "idempotency_key", Type: TypeString, MaxLen: MaxIdempotencyKey, NonEmpty: true,
		Description: "Optional key (at most 128 bytes): a repeat with the same key within 24 h returns the first call's receipt and does nothing again; the same key with different args is a conflict."}

	paramName    = Param{Name: "name", Type: TypeString, MaxLen: MaxNameBytes, Description: "Human-readable name shown in terminal_list."}
	paramCwd     = strParam("cwd", "Working directory (absolute path; default: the orchestrator's).")
	paramColumns = intParam("columns", fmt.Sprintf("Width in columns (%d to %d).", MinColumns, MaxColumns), intPtr(MinColumns), intPtr(MaxColumns))
	// paramHost names a machine of `termsprawl up --host` (CONTRACT §17).
	paramHost = Param{Name: "host", Type: TypeString, NonEmpty: true, MaxLen: 32,
		Description: "Run it on this host (a name from `termsprawl up --host NAME=DEST`; see terminal_list's host), or \"local\" for this machine. Default: this machine, or for an agent on another host its own host (it may launch elsewhere only if the operator allowed that host launch_elsewhere). cwd is then a path on that host (default: the remote home)."}
	// paramSandbox is the profile of the node's sandbox (CONTRACT §27).
	paramSandbox = enumParam("sandbox", "Sandbox profile (bubblewrap): workspace (writes only its directory, its agent's config and private caches; secrets, termsprawl's state and tmux sockets hidden), guard (only termsprawl's state, tmux sockets and other processes hidden) or none (unsandboxed). Default: none for terminal_launch, config.toml's [sandbox] default (workspace) for agent_launch; a node launched by a sandboxed node runs at least as strictly as it, whatever it asks.", "workspace", "guard", "none")
	paramRows    = intParam("rows", fmt.Sprintf("Height in rows (%d to %d).", MinRows, MaxRows), intPtr(MinRows), intPtr(MaxRows))
	paramCommand = Param{Name: "command", Type: TypeStringArray, NonEmpty: true,
		Description: "Program and arguments as an argv array (default: the user's shell)."}
)

func id(name, desc string) Param {
	return Param{Name: name, Type: TypeString, Required: true, NonEmpty: true, MaxLen: MaxIDBytes, Description: desc}
}

// Annotation presets.
var (
	annRead        = Annotations{ReadOnly: true, Idempotent: true}
	annInput       = Annotations{OpenWorld: true}
	annIdempotent  = Annotations{Idempotent: true}
	annWrite       = Annotations{}
	annDestructive = Annotations{Destructive: true}
)

// Guide topics.
const (
	TopicOverview = "overview"
	TopicTerminal = "terminal"
	TopicAgents   = "agents"
	TopicDialogs  = "dialogs"
	TopicTraces   = "traces"
)

var operations = buildOperations()

func buildOperations() []*Operation {
	inputOp := func(name, desc string, extra []Param, ann Annotations) *Operation {
		params := append([]Param{paramTerminal}, extra...)
		params = append(params, paramInputWait)
		return &Operation{Name: name, Description: desc, Topic: TopicTerminal, Params: params, Annotations: ann, Mutation: true,
			Result: InputResult{}, State: Snapshot{}}
	}
	ops := []*Operation{
		{Name: "session_info", Result: SessionInfo{}, Topic: TopicOverview, Annotations: annRead,
			Description: "Who am I: node, role, instance_id, version, tmux socket and session, the operation list and the preferences file."},
		{Name: "guide_read", Result: GuideText{}, Topic: TopicOverview, Annotations: annRead,
			Description: "Read a usage guide: overview, terminal, agents or dialogs.",
			Params:      []Param{required(enumParam("topic", "Guide topic.", GuideTopics()...))}},

		{Name: "terminal_launch", Result: NodeInfo{}, State: Snapshot{}, Topic: TopicTerminal, Mutation: true, Annotations: Annotations{OpenWorld: true},
			Description: "Launch a program in a new terminal node (its own tmux session) and return its id.",
			Params: []Param{
				paramCommand, paramName, paramCwd,
				paramEnv,
				enumParam("env_mode", "replace (default): a minimal environment (PATH HOME USER LOGNAME SHELL LANG TERM TMPDIR, TERMSPRAWL_*) plus env; inherit: the orchestrator's environment plus env.", "replace", "inherit"),
				paramColumns, paramRows, paramHost,
				{Name: "record", Type: TypeBoolean, Description: "Record the terminal from its start into <state>/traces (see terminal_record)."},
				paramLogs, paramWorktree, paramSandbox,
			},
			check: checkEnvArg},
		{Name: "terminal_list", Result: NodeList{}, Topic: TopicTerminal, Annotations: annRead,
			Description: "List every terminal node: id, name, command, owner, parent, status, exit code, size, revision and attached clients."},
		{Name: "terminal_snapshot", Result: Snapshot{}, Topic: TopicTerminal, Annotations: annRead,
			Description: "Current screen of a terminal: visible lines, cursor, modes, title, status and revision.",
			Params: []Param{paramTerminal,
				intParam("scrollback_lines", fmt.Sprintf("Also return up to this many history lines above the screen (0 to %d, default 0).", MaxSnapshotScrollback), intPtr(0), intPtr(MaxSnapshotScrollback)),
				{Name: "screenshot", Type: TypeBoolean, Description: "Also return a PNG of the screen (base64 in value.image; its size and the characters drawn as boxes in value.screenshot)."},
				intParam("screenshot_scale", "Screenshot scale, 1 to 4 (default 1: 8x17 pixels a cell).", intPtr(1), intPtr(4)),
				enumParam("screenshot_theme", "Screenshot colours for the default and 16 ANSI colours (default dark).", "dark", "light"),
			}},
		{Name: "terminal_read", Result: ReadResult{}, Topic: TopicTerminal, Annotations: annRead,
			Description: "The most recent output of a terminal as plain text (history and screen, newest last).",
			Params: []Param{paramTerminal,
				intParam("max_chars", fmt.Sprintf("Return at most this many characters (1 to %d, default %d).", MaxReadChars, DefaultReadChars), intPtr(1), intPtr(MaxReadChars)),
			}},
		{Name: "terminal_capture_since", Result: Changes{}, Topic: TopicTerminal, Annotations: annRead,
			Description: "Rows that changed since revision cursor; a cursor older than the kept history is kind conflict (history-truncated): take a terminal_snapshot instead.",
			Params: []Param{paramTerminal,
				required(intParam("cursor", "Revision returned by an earlier call (snapshot, capture or input operation).", intPtr(0), nil)),
			}},
		{Name: "terminal_wait_for", Result: WaitResult{}, Topic: TopicTerminal, Annotations: annRead,
			Description: "Wait (event-driven, at most 40 s) until text or a regex appears after a baseline revision, output goes quiet, the program exits or the screen renders.",
			Params:      []Param{paramTerminal, paramWaitMode, paramWaitText, paramWaitPattern, paramQuietMs, paramAfter, paramTimeoutMs},
			check:       checkFlatWait},

		inputOp("terminal_type", "Type literal text as keystrokes (no Enter; use terminal_submit to run a command).",
			[]Param{required(strParam("text", "Literal text to type."))}, annInput),
		inputOp("terminal_press", "Press keys or chords such as Enter, Escape, Up, C-c, M-x, F5 (several separated by spaces), encoded for the program's current modes.",
			[]Param{{Name: "keys", Type: TypeString, Required: true, NonEmpty: true, Description: "Key names separated by spaces, e.g. \"Escape : w q Enter\"."}}, annInput),
		inputOp("terminal_paste", "Paste text, bracketed when the program enabled bracketed paste (no Enter).",
			[]Param{required(strParam("text", "Text to paste."))}, annInput),
		inputOp("terminal_submit", "Enter text and press Enter exactly once after the program has taken it; with wait, one race-free call that runs something and waits for the outcome.",
			[]Param{required(strParam("text", "Text to submit (empty: just press Enter)."))}, annInput),
		inputOp("terminal_interrupt", "Press Ctrl+C in the terminal.", nil, Annotations{Destructive: true, OpenWorld: true}),

		{Name: "terminal_resize", Result: ResizeResult{}, State: Snapshot{}, Topic: TopicTerminal, Mutation: true, Annotations: annIdempotent,
			Description: "Resize a terminal to columns x rows.",
			Params:      []Param{paramTerminal, required(paramColumns), required(paramRows)}},
		{Name: "terminal_signal", Result: SignalResult{}, State: Snapshot{}, Topic: TopicTerminal, Mutation: true, Annotations: annDestructive,
			Description: "Send a signal (INT, TERM, KILL or HUP) to the terminal's program.",
			Params:      []Param{paramTerminal, required(enumParam("signal", "Signal name.", "INT", "TERM", "KILL", "HUP"))}},
		{Name: "terminal_close", Result: CloseResult{}, State: ClosedState{}, Topic: TopicTerminal, Mutation: true, Annotations: Annotations{Destructive: true, Idempotent: true},
			Description: "Close a terminal: kill its program and tmux session and revoke its token (destructive).",
			Params:      []Param{paramTerminal}},
		{Name: "terminal_scrollback", Result: ScrollbackResult{}, Topic: TopicTerminal, Annotations: annRead,
			Description: "Read lines from the terminal's tmux history, optionally only those containing a search string.",
			Params: []Param{paramTerminal,
				intParam("from", "First line as tmux numbers them: 0 is the top visible line, negative numbers reach into history (default: the start of history).", nil, intPtr(MaxRows)),
				intParam("to", "Last line, same numbering (default: the bottom visible line).", nil, intPtr(MaxRows)),
				strParam("search", "Only return lines containing this text."),
			}},
		{Name: "terminal_external", Result: ExternalResult{}, State: Snapshot{}, Topic: TopicTerminal, Mutation: true, Annotations: Annotations{OpenWorld: true},
			Description: "Open a new external terminal window attached to the terminal (uses agent-tools/preferences.json or the first known emulator on PATH).",
			Params:      []Param{paramTerminal}},
		{Name: "terminal_focus", Result: FocusResult{}, State: Snapshot{}, Topic: TopicTerminal, Mutation: true, Annotations: annIdempotent,
			Description: "Switch the humans' attached tmux clients to this terminal.",
			Params:      []Param{paramTerminal}},

		// termwright's terminal tools (CONTRACT §11); their params and checks are in params_terminal.go.
		{Name: "terminal_capabilities", Result: Capabilities{}, Topic: TopicTerminal, Annotations: annRead,
			Description: "What the terminal supports now: size, modes, the mouse tracking and encoding the program enabled, recording, followed logs, and the crash report if the program died.",
			Params:      []Param{paramTerminal}},
		{Name: "terminal_query", Result: QueryResult{}, Topic: TopicTerminal, Annotations: annRead,
			Description: "Find text or a regex on the visible screen, immediately: each match's row, column, length and a screen: ref for the mouse operations (no match is an empty list).",
			Params:      []Param{paramTerminal, paramQueryText, paramQueryPattern, paramQueryNth},
			check:       checkQuery},
		mouseOp("terminal_click", "Click a cell (or a terminal_query ref) with a real mouse report in the encoding the program enabled; not_run (input-mode-disabled) and nothing sent when it has no mouse tracking.",
			[]Param{paramAt, paramRef, paramButton, paramClickCount, paramModifiers}),
		mouseOp("terminal_hover", "Move the mouse to a cell (or ref) without a button; needs any-motion tracking (DECSET 1003), else not_run (input-mode-disabled) and nothing sent.",
			[]Param{paramAt, paramRef, paramModifiers}),
		mouseOp("terminal_wheel", "Turn the mouse wheel over a cell (or ref): delta_y notches, positive scrolls down; needs mouse tracking, else not_run (input-mode-disabled).",
			[]Param{paramAt, paramRef, paramDeltaY, paramModifiers}),
		mouseOp("terminal_drag", "Press a button at from, move to to, release: needs button-event or any-motion tracking (DECSET 1002/1003), else not_run (input-mode-disabled) and nothing sent.",
			[]Param{paramFrom, paramTo, paramButton, paramModifiers}),
		withCheck(inputOp("terminal_write_raw", "Write bytes to the program verbatim (text or base64): no key encoding, no newline added.",
			[]Param{paramRawText, paramRawBase64}, annInput), checkRaw),

		{Name: "watch_start", Result: WatchStarted{}, Topic: TopicTerminal, Annotations: annWrite,
			Description: "Start a wait that outlives one request (same conditions as terminal_wait_for, no time limit); returns {watch}.",
			Params:      []Param{paramTerminal, paramWaitMode, paramWaitText, paramWaitPattern, paramQuietMs, paramAfter},
			check:       checkFlatWait},
		{Name: "watch_wait", Result: WatchFired{}, Topic: TopicTerminal, Annotations: annRead,
			Description: "Wait up to timeout_ms (max 40 s) for a watch to fire; kind timeout means it has not fired yet, call again.",
			Params:      []Param{id("watch", "Watch id from watch_start."), paramTimeoutMs}},
		{Name: "watch_cancel", Result: WatchCancelled{}, Topic: TopicTerminal, Annotations: annIdempotent,
			Description: "Cancel a watch.",
			Params:      []Param{id("watch", "Watch id from watch_start.")}},

		{Name: "agent_launch", Result: NodeInfo{}, State: Snapshot{}, Topic: TopicAgents, Mutation: true, Annotations: Annotations{OpenWorld: true},
			Description: "Launch an agent (claude, codex, gemini, opencode or custom) in a new node wired to termsprawl (session file, termsprawlctl, MCP registration).",
			Params: []Param{
				required(enumParam("agent", "Agent kind; custom needs command.", "claude", "codex", "gemini", "opencode", "custom")),
				{Name: "command", Type: TypeStringArray, NonEmpty: true, Description: "Program and arguments as an argv array (default: the agent's usual command; required for custom)."},
				paramName, paramCwd, paramHost, paramWorktree, paramSandbox, paramEnv,
				{Name: "policy", Type: TypeString, NonEmpty: true, MaxLen: MaxNameBytes, Description: "Add the permission rules of config.toml's [policy.named.NAME] (CONTRACT §28). An agent's launches get its own policy and may name no other."},
			},
			check: checkAgentLaunch},
		{Name: "agent_status", Result: AgentList{}, Topic: TopicAgents, Annotations: annRead,
			Description: "List agent nodes with their state (starting, working, waiting, idle, error, exited), since when, and whether one needs a human; with node and explain: true, the evidence (why), newest first.",
			Params: []Param{
				{Name: "node", Type: TypeString, NonEmpty: true, MaxLen: MaxNameBytes, Description: "Only this agent: its id, else its name when unique, else a unique id prefix."},
				{Name: "explain", Type: TypeBoolean, Description: "true: add why, the evidence behind each state (hooks, dialogs, the process, the screen), newest first."},
			}},
		{Name: "agent_report", Result: AgentReport{}, Topic: TopicAgents, Annotations: annIdempotent,
			Description: "Report your own state (idle, working, waiting or error) or the hook event that happened (event, as termsprawlctl hook does) and an optional message for agent_status; accepts_tasks opts in to agent_send from agents that may not drive you.",
			Params: []Param{
				enumParam("state", "Your state (required unless event is given).", "idle", "working", "waiting", "error"),
				{Name: "event", Type: TypeString, NonEmpty: true, MaxLen: MaxNameBytes, Description: "The agent's hook event (e.g. Claude Code's UserPromptSubmit, Stop, StopFailure): termsprawl derives the state; an event it does not know is logged and changes nothing."},
				strParam("message", "Short status message."),
				{Name: "accepts_tasks", Type: TypeBoolean, Description: "true: any agent may agent_send you tasks (they are typed into your prompt); false: only the operator and the nodes that may drive you (the default)."},
				{Name: "conversation", Type: TypeString, NonEmpty: true, MaxLen: MaxNameBytes, Conversation: true, Description: "Your own conversation id (Claude Code's session_id, as termsprawlctl hook passes it; letters, digits, '.', '_', ':' and '-', starting with a letter or digit): kept so a restore after a reboot resumes it."},
			},
			check: checkAgentReport},
		{Name: "agent_send", Result: TaskSent{}, State: Snapshot{}, Topic: TopicAgents, Mutation: true, Annotations: annInput,
			Description: "Submit text into another agent's prompt as a task; returns {task} to follow with agent_task. Allowed into agents you may drive and agents that opted in with agent_report {accepts_tasks: true}.",
			Params: []Param{
				{Name: "node", Type: TypeString, Required: true, NonEmpty: true, MaxLen: MaxNameBytes, Description: "The recipient agent: its id, else its name when unique, else a unique id prefix (see agent_status)."},
				{Name: "text", Type: TypeString, Required: true, NonEmpty: true, Description: "The message to submit."},
				id("message_id", "Your id for this message (reused ids are duplicates)."),
			}},
		{Name: "agent_task", Result: Task{}, Topic: TopicAgents, Annotations: annRead,
			Description: "Read a task sent with agent_send and its reply, if any.",
			Params:      []Param{id("task", "Task id from agent_send.")}},
		{Name: "agent_reply", Result: Task{}, State: Task{}, Topic: TopicAgents, Mutation: true, Annotations: annWrite,
			Description: "Reply to a task sent to you (recipient only), marking it completed or failed.",
			Params: []Param{
				id("task", "Task id you received."),
				required(strParam("text", "Your reply.")),
				required(enumParam("state", "Outcome.", "completed", "failed")),
			}},

		{Name: "dialog_request", Result: DialogOutcome{}, Topic: TopicDialogs, Annotations: annWrite,
			Description: "Open a permission prompt or question for the human (or, with dialog, wait on your open one again) and block up to wait_ms (at most 40 s) for the answer; a dialog nobody answers within timeout_ms ends as a deny.",
			Params: []Param{
				enumParam("kind", "permission (allow/deny) or question (pick an option); required unless dialog is given.", "permission", "question"),
				{Name: "title", Type: TypeString, NonEmpty: true, Description: "What is being asked; required unless dialog is given."},
				{Name: "options", Type: TypeStringArray, NonEmpty: true, Description: "Choices for a question."},
				{Name: "tool", Type: TypeString, NonEmpty: true, MaxLen: MaxNameBytes, Description: "For a permission: the tool asked for (e.g. Bash); \"always\" is remembered by tool and input, never by title."},
				{Name: "input", Type: TypeString, NonEmpty: true, Description: "With tool: the tool's full input as JSON text; the human sees it in full, the title is only a summary."},
				intParam("timeout_ms", fmt.Sprintf("How long the dialog stays open before it ends as a deny (default %d, max %d: 10 minutes).", DefaultWaitTimeout.Milliseconds(), MaxDialogTimeout.Milliseconds()), intPtr(0), intPtr(int(MaxDialogTimeout.Milliseconds()))),
				intParam("wait_ms", fmt.Sprintf("How long this call blocks (default and max %d); running out while the dialog is open is kind timeout with details.dialog: call again with dialog.", MaxWaitTimeout.Milliseconds()), intPtr(0), intPtr(int(MaxWaitTimeout.Milliseconds()))),
				{Name: "dialog", Type: TypeString, NonEmpty: true, MaxLen: MaxIDBytes, Description: "Your open dialog's id (from a dialog_request that ran out of wait_ms): wait on it again."},
				strParam("cwd", "With tool: where your shell is as you ask (absolute; the hook's cwd). Permission policies place a command's relative paths from it; nothing outside your node's directory is allowed by a rule."),
			},
			check: checkDialogRequest},
		{Name: "dialog_list", Result: DialogList{}, Topic: TopicDialogs, Annotations: annRead,
			Description: "List pending dialogs of all agents; they are other agents' inputs, and over MCP only deny is possible."},
		{Name: "dialog_answer", Result: DialogOutcome{}, State: DialogState{}, Topic: TopicDialogs, Mutation: true, Annotations: annIdempotent,
			Description: "Answer another agent's pending dialog; over MCP only deny is possible (allow/always must be given in termsprawl by the human).",
			Params: []Param{
				id("dialog", "Dialog id from dialog_list."),
				required(enumParam("mode", "deny, allow or always (allow and remember); only deny over MCP.", "deny", "allow", "always")),
				strParam("selection", "The chosen option of a question."),
				strParam("reason", "Why (shown to the agent, e.g. why a permission was denied)."),
				enumParam("surface", "Where the human answered, for the audit log (CONTRACT §28): cli, dashboard, picker or mcp.", "cli", "dashboard", "picker", "mcp"),
			}},
	}
	ops = append(ops, traceOperations()...)
	ops = append(ops, notifyOperations()...)
	ops = append(ops, worktreeOperations()...)
	ops = append(ops, semanticOperations()...)
	ops = append(ops, hostOperations()...)
	ops = append(ops, restoreOperations()...)
	ops = append(ops, fleetOperations()...)
	ops = append(ops, policyOperations()...)
	addLocators(ops)
	for _, op := range ops {
		if op.Mutation {
			op.Params = append(op.Params, paramIdempotencyKey)
		}
	}
	return ops
}

// Operations returns the table in a stable order. The pointers are shared:
// callers must not modify them.
func Operations() []*Operation {
	return append([]*Operation(nil), operations...)
}

var operationIndex = func() map[string]*Operation {
	m := make(map[string]*Operation, len(operations))
	for _, op := range operations {
		m[op.Name] = op
	}
	return m
}()

// Lookup finds an operation by name.
func Lookup(name string) (*Operation, bool) {
	op, ok := operationIndex[name]
	return op, ok
}

// OperationNames lists every operation name in table order.
func OperationNames() []string {
	names := make([]string, len(operations))
	for i, op := range operations {
		names[i] = op.Name
	}
	return names
}

// UnknownOperationError is the usage error for a name not in the table.
func UnknownOperationError(name string) *Error {
	near := SuggestOperation(name)
	e := Errorf(KindUsage, "unknown operation %q%s; valid operations: %s", clip(name, 64), DidYouMean(near), strings.Join(OperationNames(), ", ")).
		WithDetails("operation", clip(name, 64))
	if len(near) > 0 {
		e = e.WithDetails("suggestions", near)
	}
	return e
}

// ValidateRequest checks an operation name and its args against the table
// and returns the operation.
func ValidateRequest(req Request) (*Operation, error) {
	op, ok := Lookup(req.Operation)
	if !ok {
		return nil, UnknownOperationError(req.Operation)
	}
	if err := op.Validate(req.Args); err != nil {
		return nil, err
	}
	return op, nil
}

// NormalizeArgs returns args, or {} when args are empty or null.
func NormalizeArgs(args json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return json.RawMessage("{}")
	}
	return args
}

// DecodeArgs unmarshals validated args into v (a struct with json tags),
// treating empty or null args as {}. Failures are usage errors.
func DecodeArgs(args json.RawMessage, v any) error {
	if err := json.Unmarshal(NormalizeArgs(args), v); err != nil {
		return Errorf(KindUsage, "decode args: %w", err)
	}
	return nil
}

func (op *Operation) usageErr(arg, format string, a ...any) *Error {
	e := Errorf(KindUsage, "%s: "+format, append([]any{op.Name}, a...)...)
	e.Details = map[string]any{"operation": op.Name}
	if arg != "" {
		e.Details["argument"] = arg
	}
	return e
}

func (op *Operation) allowedText() string {
	if len(op.Params) == 0 {
		return "this operation takes no arguments: pass {}"
	}
	return "allowed arguments: " + strings.Join(op.ParamNames(), ", ")
}

// decodeObject parses a JSON object into its members. Empty and null mean
// an empty object.
func decodeObject(raw json.RawMessage) (map[string]json.RawMessage, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return map[string]json.RawMessage{}, nil
	}
	if t[0] != '{' {
		return nil, fmt.Errorf("expected a JSON object, got %s", jsonKindOf(t))
	}
	// encoding/json keeps the last of two equal keys: refuse them instead
	// of guessing which one the sender meant.
	if err := CheckStrictJSON(t); err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(t, &m); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	return m, nil
}

func jsonKindOf(t []byte) string {
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "a number"
	}
	return "invalid JSON"
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// clip shortens s for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Validate checks args strictly against the operation's schema: args must
// be a JSON object (empty or null mean {}); unknown, missing, wrongly typed
// or out-of-range arguments, strings over MaxStringBytes (or the argument's
// MaxLen) and strings containing NUL are *Error of KindUsage that say what
// was wrong and what to do. For duplicate keys the last one counts.
func (op *Operation) Validate(args json.RawMessage) error {
	fields, err := decodeObject(args)
	var dup *DuplicateKeyError
	if errors.As(err, &dup) {
		return op.usageErr(dup.Key, "%w", err)
	}
	if err != nil {
		return op.usageErr("", "args must be a JSON object of named arguments (%w); %s", err, op.allowedText())
	}
	for _, k := range sortedKeys(fields) {
		if op.Param(k) == nil {
			return op.usageErr(clip(k, 64), "unknown argument %q; %s", clip(k, 64), op.allowedText())
		}
	}
	for i := range op.Params {
		p := &op.Params[i]
		raw, ok := fields[p.Name]
		if !ok {
			if p.Required {
				return op.usageErr(p.Name, "missing required argument %q (%s); add it to args", p.Name, p.Description)
			}
			continue
		}
		if err := op.checkValue(p, p.Name, raw); err != nil {
			return err
		}
	}
	if op.check != nil {
		return op.check(op, fields)
	}
	return nil
}

func (op *Operation) checkValue(p *Param, path string, raw json.RawMessage) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return op.usageErr(path, "argument %q must be %s, not null; omit it to use the default", path, p.typeText())
	}
	switch p.Type {
	case TypeString:
		if t[0] != '"' {
			return op.usageErr(path, "argument %q must be a string, got %s", path, jsonKindOf(t))
		}
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return op.usageErr(path, "argument %q is not a valid JSON string: %w", path, err)
		}
		return op.checkString(p, path, s)
	case TypeInteger:
		n, ok := parseInteger(t)
		if !ok {
			return op.usageErr(path, "argument %q must be %s, got %s", path, p.typeText(), clip(string(t), 40))
		}
		if (p.Min != nil && n < int64(*p.Min)) || (p.Max != nil && n > int64(*p.Max)) {
			return op.usageErr(path, "argument %q must be %s, got %d", path, p.typeText(), n)
		}
		return nil
	case TypeBoolean:
		if !bytes.Equal(t, []byte("true")) && !bytes.Equal(t, []byte("false")) {
			return op.usageErr(path, "argument %q must be true or false, got %s", path, jsonKindOf(t))
		}
		return nil
	case TypeStringArray:
		if t[0] != '[' {
			return op.usageErr(path, "argument %q must be an array of strings, got %s", path, jsonKindOf(t))
		}
		var items []json.RawMessage
		if err := json.Unmarshal(t, &items); err != nil {
			return op.usageErr(path, "argument %q is not a valid JSON array: %w", path, err)
		}
		if p.NonEmpty && len(items) == 0 {
			return op.usageErr(path, "argument %q must not be an empty array; omit it to use the default", path)
		}
		elem := Param{Name: p.Name, Type: TypeString, MaxLen: p.MaxLen, Enum: p.Enum}
		if p.MaxItems > 0 && len(items) > p.MaxItems {
			return op.usageErr(path, "argument %q has %d elements, at most %d are allowed", path, len(items), p.MaxItems)
		}
		for i, it := range items {
			ip := fmt.Sprintf("%s[%d]", path, i)
			it = bytes.TrimSpace(it)
			if len(it) == 0 || it[0] != '"' {
				return op.usageErr(path, "argument %q must be a string, got %s", ip, jsonKindOf(it))
			}
			if err := op.checkValue(&elem, ip, it); err != nil {
				return err
			}
		}
		return nil
	case TypeObject:
		if t[0] != '{' {
			return op.usageErr(path, "argument %q must be an object of string values, got %s", path, jsonKindOf(t))
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(t, &m); err != nil {
			return op.usageErr(path, "argument %q is not a valid JSON object: %w", path, err)
		}
		elem := Param{Name: p.Name, Type: TypeString, MaxLen: p.MaxLen}
		for _, k := range sortedKeys(m) {
			kp := path + "." + clip(k, 64)
			if err := op.checkString(&Param{Name: p.Name, Type: TypeString, MaxLen: p.MaxLen, NonEmpty: true}, kp+" (key)", k); err != nil {
				return err
			}
			v := bytes.TrimSpace(m[k])
			if len(v) == 0 || v[0] != '"' {
				return op.usageErr(path, "argument %q must be a string, got %s", kp, jsonKindOf(v))
			}
			if err := op.checkValue(&elem, kp, v); err != nil {
				return err
			}
		}
		return nil
	case TypeWaitObject:
		if t[0] != '{' {
			return op.usageErr(path, "argument %q must be an object like {\"wait\":\"text\",\"text\":\"$ \"}, got %s", path, jsonKindOf(t))
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(t, &m); err != nil {
			return op.usageErr(path, "argument %q is not a valid JSON object: %w", path, err)
		}
		return op.checkWaitFields(path+".", m)
	case TypeStruct, TypeStructArray:
		return op.checkNested(p, path, t)
	case TypeRawObject:
		if t[0] != '{' {
			return op.usageErr(path, "argument %q must be a JSON object, got %s", path, jsonKindOf(t))
		}
		return nil
	}
	return op.usageErr(path, "argument %q has an unsupported type %q in the table", path, p.Type)
}

func (op *Operation) checkString(p *Param, path, s string) error {
	limit := p.MaxLen
	if limit <= 0 {
		limit = MaxStringBytes
	}
	if len(s) > limit {
		return op.usageErr(path, "argument %q is %d bytes, over the limit of %d bytes; shorten it or split it into several calls", path, len(s), limit)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return op.usageErr(path, "argument %q contains a NUL byte, which is not allowed; remove it", path)
	}
	if p.NonEmpty && s == "" {
		return op.usageErr(path, "argument %q must not be empty", path)
	}
	if p.NodeID && !ValidNodeID(s) {
		return op.usageErr(path, "argument %q must be a node id (letters, digits, _ and -, at most 64, starting with a letter or digit), got %q; see terminal_list", path, clip(s, 70))
	}
	if p.Conversation {
		if _, err := ParseConversationID(s); err != nil {
			return op.usageErr(path, "argument %q: %v; pass the agent's own id or leave it out", path, err)
		}
	}
	if len(p.Enum) > 0 {
		for _, e := range p.Enum {
			if s == e {
				return nil
			}
		}
		return op.usageErr(path, "argument %q must be one of %s, got %q", path, strings.Join(p.Enum, ", "), clip(s, 40))
	}
	return nil
}

// parseInteger accepts a JSON number with an integral value (5, -3, 5.0,
// 1e3) that fits in an int64 without losing precision.
func parseInteger(t []byte) (int64, bool) {
	if len(t) == 0 || (t[0] != '-' && (t[0] < '0' || t[0] > '9')) {
		return 0, false
	}
	var num json.Number
	if err := json.Unmarshal(t, &num); err != nil {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(num), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

func (p *Param) typeText() string {
	switch p.Type {
	case TypeString:
		if len(p.Enum) > 0 {
			return "one of " + strings.Join(p.Enum, ", ")
		}
		return "a string"
	case TypeInteger:
		switch {
		case p.Min != nil && p.Max != nil:
			return fmt.Sprintf("an integer from %d to %d", *p.Min, *p.Max)
		case p.Min != nil:
			return fmt.Sprintf("an integer of at least %d", *p.Min)
		case p.Max != nil:
			return fmt.Sprintf("an integer of at most %d", *p.Max)
		}
		return "an integer"
	case TypeBoolean:
		return "true or false"
	case TypeObject:
		return "an object of string values"
	case TypeStringArray:
		if len(p.Enum) > 0 {
			return "an array of " + strings.Join(p.Enum, ", ")
		}
		return "an array of strings"
	case TypeWaitObject:
		return "a wait object"
	case TypeStruct, TypeStructArray:
		return nestedTypeText(p)
	case TypeRawObject:
		return "a JSON object"
	}
	return string(p.Type)
}

// checkWaitFields validates the members of a nested wait object.
func (op *Operation) checkWaitFields(prefix string, m map[string]json.RawMessage) error {
	for _, k := range sortedKeys(m) {
		known := false
		for _, p := range waitObjectParams {
			if p.Name == k {
				known = true
			}
		}
		if !known {
			return op.usageErr(prefix+clip(k, 64), "unknown argument %q; allowed in the wait object: wait, text, pattern, quiet_ms, timeout_ms", prefix+clip(k, 64))
		}
	}
	for i := range waitObjectParams {
		p := &waitObjectParams[i]
		raw, ok := m[p.Name]
		if !ok {
			if p.Required {
				return op.usageErr(prefix+p.Name, "missing required argument %q (%s)", prefix+p.Name, p.Description)
			}
			continue
		}
		if err := op.checkValue(p, prefix+p.Name, raw); err != nil {
			return err
		}
	}
	return op.checkWaitRules(prefix, m)
}

func checkFlatWait(op *Operation, fields map[string]json.RawMessage) error {
	return op.checkWaitRules("", fields)
}

// checkWaitRules enforces: wait=text needs text, wait=regex needs a valid
// pattern, and text/pattern are only accepted with their mode.
func (op *Operation) checkWaitRules(prefix string, m map[string]json.RawMessage) error {
	var mode string
	if err := json.Unmarshal(m["wait"], &mode); err != nil {
		return nil // already reported as missing or mistyped
	}
	_, hasText := m["text"]
	_, hasPattern := m["pattern"]
	switch {
	case mode == WaitText && !hasText:
		return op.usageErr(prefix+"text", "wait=text needs the argument %q: the substring to wait for", prefix+"text")
	case mode == WaitRegex && !hasPattern:
		return op.usageErr(prefix+"pattern", "wait=regex needs the argument %q: the Go RE2 pattern to wait for", prefix+"pattern")
	case mode != WaitText && hasText:
		return op.usageErr(prefix+"text", "argument %q is only used with wait=text (wait is %q); remove it or use wait=text", prefix+"text", mode)
	case mode != WaitRegex && hasPattern:
		return op.usageErr(prefix+"pattern", "argument %q is only used with wait=regex (wait is %q); remove it or use wait=regex", prefix+"pattern", mode)
	}
	if hasPattern {
		var pat string
		if err := json.Unmarshal(m["pattern"], &pat); err == nil {
			if _, err := regexp.Compile(pat); err != nil {
				return op.usageErr(prefix+"pattern", "argument %q is not a valid Go RE2 regular expression: %w", prefix+"pattern", err)
			}
		}
	}
	return nil
}

func checkDialogRequest(op *Operation, fields map[string]json.RawMessage) error {
	if raw, ok := fields["input"]; ok {
		if _, ok := fields["tool"]; !ok {
			return op.usageErr("input", "argument \"input\" needs \"tool\": the tool whose input it is")
		}
		var in string
		if json.Unmarshal(raw, &in) == nil {
			if _, err := CanonicalJSON([]byte(in)); err != nil {
				return op.usageErr("input", "argument \"input\" must be the tool's input as JSON text: %w", err)
			}
		}
	}
	if _, ok := fields["dialog"]; ok {
		return nil
	}
	for _, name := range []string{"kind", "title"} {
		if _, ok := fields[name]; !ok {
			return op.usageErr(name, "argument %q is required to open a dialog (or pass \"dialog\" to wait on an open one)", name)
		}
	}
	return nil
}

func checkAgentReport(op *Operation, fields map[string]json.RawMessage) error {
	_, st := fields["state"]
	_, ev := fields["event"]
	if !st && !ev {
		return op.usageErr("state", "argument \"state\" is required (or pass \"event\", the hook event that happened)")
	}
	return nil
}

func checkAgentLaunch(op *Operation, fields map[string]json.RawMessage) error {
	var agent string
	if err := json.Unmarshal(fields["agent"], &agent); err != nil {
		return nil
	}
	if _, ok := fields["command"]; agent == "custom" && !ok {
		return op.usageErr("command", "agent=custom needs the argument \"command\": the argv of the agent to run")
	}
	return checkEnvArg(op, fields)
}

// InputSchema returns the operation's JSON Schema: a strict object
// (additionalProperties false, also for the nested wait object) with the
// properties, required names, enums and ranges of the table. String
// lengths are bytes in Validate; maxLength here gives the same number.
func (op *Operation) InputSchema() map[string]any {
	return objectSchema(op.Params)
}

// InputSchemaJSON is InputSchema marshalled.
func (op *Operation) InputSchemaJSON() json.RawMessage {
	raw, err := json.Marshal(op.InputSchema())
	if err != nil {
		// The schema is built from plain maps, slices and strings.
		panic(fmt.Sprintf("tools: marshal schema of %s: %v", op.Name, err))
	}
	return raw
}

func objectSchema(params []Param) map[string]any {
	props := make(map[string]any, len(params))
	requiredNames := []string{}
	for _, p := range params {
		props[p.Name] = paramSchema(p)
		if p.Required {
			requiredNames = append(requiredNames, p.Name)
		}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             requiredNames,
		"additionalProperties": false,
	}
}

func stringSchema(p Param) map[string]any {
	s := map[string]any{"type": "string"}
	limit := p.MaxLen
	if limit <= 0 {
		limit = MaxStringBytes
	}
	switch {
	case len(p.Enum) > 0:
		s["enum"] = append([]string(nil), p.Enum...)
	case p.NodeID:
		s["pattern"] = nodeIDPattern
		s["maxLength"] = 64
	case p.Conversation:
		s["pattern"] = ConversationPattern
		s["maxLength"] = 128
	default:
		s["maxLength"] = limit
		if p.NonEmpty {
			s["minLength"] = 1
		}
	}
	return s
}

func paramSchema(p Param) map[string]any {
	var s map[string]any
	switch p.Type {
	case TypeString:
		s = stringSchema(p)
	case TypeInteger:
		s = map[string]any{"type": "integer"}
		if p.Min != nil {
			s["minimum"] = *p.Min
		}
		if p.Max != nil {
			s["maximum"] = *p.Max
		}
	case TypeBoolean:
		s = map[string]any{"type": "boolean"}
	case TypeObject:
		s = map[string]any{"type": "object", "additionalProperties": stringSchema(Param{MaxLen: p.MaxLen})}
	case TypeStringArray:
		s = map[string]any{"type": "array", "items": stringSchema(Param{MaxLen: p.MaxLen, Enum: p.Enum})}
		if p.MaxItems > 0 {
			s["maxItems"] = p.MaxItems
		}
		if p.NonEmpty {
			s["minItems"] = 1
		}
	case TypeWaitObject:
		s = objectSchema(waitObjectParams)
	case TypeStruct, TypeStructArray:
		s = nestedSchema(p)
	case TypeRawObject:
		s = semanticTreeSchema()
	default:
		s = map[string]any{}
	}
	if p.Description != "" {
		s["description"] = p.Description
	}
	return s
}

// IdempotencyKey returns the idempotency_key of validated args ("" if none).
func IdempotencyKey(args json.RawMessage) string {
	m, err := decodeObject(args)
	if err != nil {
		return ""
	}
	var key string
	if err := json.Unmarshal(m["idempotency_key"], &key); err != nil {
		return ""
	}
	return key
}

// DialogMCPRefusal is the not_run message for dialog_answer modes other
// than deny over MCP (CONTRACT §8.4).
const DialogMCPRefusal = "approve permissions in termsprawl, not over MCP"

// checkTable reports rows whose declarations disagree: every operation
// has a value type, mutations a state type, and nothing that creates or
// ends something is annotated read-only (the client repeats read-only
// calls on --retry).
func checkTable(ops []*Operation) error {
	for _, op := range ops {
		switch {
		case op.Result == nil:
			return fmt.Errorf("operation %s has no Result type", op.Name)
		case op.Mutation && op.State == nil:
			return fmt.Errorf("mutation %s has no State type", op.Name)
		case !op.Mutation && op.State != nil:
			return fmt.Errorf("operation %s is not a mutation but has a State type", op.Name)
		case op.Annotations.ReadOnly && (op.Mutation || op.Annotations.Destructive):
			return fmt.Errorf("operation %s is annotated read-only but changes something", op.Name)
		}
	}
	return nil
}
