package ctllite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// The parts of `termsprawlctl hook` both the lite binary and the full
// CLI (cli/hook.go) use, so that both read an agent's hook JSON and word
// its report the same way.

// MaxHookInput bounds the hook JSON read (a Write tool's input carries
// the whole file).
const MaxHookInput = 8 << 20

// Agent states (tools.AgentIdle …; TestLiteMatchesTools).
const (
	stateIdle    = "idle"
	stateWorking = "working"
	stateWaiting = "waiting"
	stateError   = "error"
)

// ClaudeStates are the Claude Code events the hook knows and the agent
// state each reports ("" for the permission event).
var ClaudeStates = map[string]string{
	"SessionStart": stateIdle, "UserPromptSubmit": stateWorking,
	"Notification": stateWaiting, "Stop": stateIdle, "PermissionRequest": "",
	// A turn that failed on an API error (Stop does not fire then).
	"StopFailure": stateError,
}

// IdleNotification is the event termsprawl reports for Claude Code's
// "Claude is waiting for your input" notification (notification_type
// idle_prompt, about 60 s after a turn ended with no dialog open): the
// agent is at its prompt, which is idle (CONTRACT §20), not a human
// needed; termsprawl keeps it as evidence and changes no state.
const IdleNotification = "IdleNotification"

// ClaudeEvent is the event a Claude Code hook reports, and its state:
// its own; IdleNotification (idle) for an idle prompt's notification;
// Stop (idle) for a StopFailure whose error is the human's interrupt (Esc
// aborts the request: an interrupt ends a turn, it does not fail it,
// CONTRACT §20).
func ClaudeEvent(event string, in HookInput) (string, string) {
	switch event {
	case "Notification":
		if in.NotificationType == "idle_prompt" || (in.NotificationType == "" && strings.Contains(in.Message, "waiting for your input")) {
			return IdleNotification, stateIdle
		}
	case "StopFailure":
		if Interrupted(RawText(in.Error) + " " + RawText(in.ErrorDetails)) {
			return "Stop", stateIdle
		}
	}
	return event, ClaudeStates[event]
}

// Interrupted reports whether an error text is an interrupt's: the
// request aborted or interrupted by the user.
func Interrupted(text string) bool {
	low := strings.ToLower(text)
	return strings.Contains(low, "abort") || strings.Contains(low, "interrupted")
}

// GeminiStates are Gemini CLI's events and their states.
var GeminiStates = map[string]string{
	"SessionStart": stateIdle, "BeforeAgent": stateWorking,
	"AfterAgent": stateIdle, "Notification": stateWaiting,
	// The permission gate (a dialog): handled by the full CLI.
	"BeforeTool": "",
}

// IsPermissionHook reports whether an agent's hook event asks a human
// (a dialog): it is never answered by the lite path, and a hook that
// cannot run denies it.
func IsPermissionHook(agent, event string) bool {
	switch agent {
	case "claude", "codex", "opencode":
		return event == "PermissionRequest"
	case "gemini":
		return event == "BeforeTool"
	}
	return false
}

// CodexStates are Codex's hook events (its hooks take Claude Code's
// JSON and answers) and their states; notify is handled apart.
var CodexStates = map[string]string{
	"SessionStart": stateIdle, "UserPromptSubmit": stateWorking,
	"Stop": stateIdle, "PermissionRequest": "",
}

// OpencodeStates are the events termsprawl's OpenCode plugin sends (in
// Claude Code's names and JSON, orchestrator/toolserver/opencode_plugin.js)
// and their states.
var OpencodeStates = map[string]string{
	"SessionStart": stateIdle, "UserPromptSubmit": stateWorking,
	"Stop": stateIdle, "StopFailure": stateError, "PermissionRequest": "",
}

// CodexIdle is the state codex's notify reports.
const CodexIdle = stateIdle

// HookInput is the part of an agent's hook JSON the hook reads.
type HookInput struct {
	Event            string          `json:"hook_event_name"`
	Cwd              string          `json:"cwd"`
	ToolName         string          `json:"tool_name"`
	ToolInput        json.RawMessage `json:"tool_input"`
	Prompt           string          `json:"prompt"`
	Message          string          `json:"message"`
	NotificationType string          `json:"notification_type"`
	// StopFailure's error and error_details (shapes vary: kept raw).
	Error        json.RawMessage `json:"error"`
	ErrorDetails json.RawMessage `json:"error_details"`
	// SessionID is the agent's conversation (Claude Code, Gemini CLI);
	// codex's notify calls it thread-id. Kept for a restore (CONTRACT §25).
	SessionID string `json:"session_id"`
	ThreadID  string `json:"thread-id"`
	// codex notify
	Type             string `json:"type"`
	LastAssistantMsg string `json:"last-assistant-message"`
}

// ReadHookInput reads the hook JSON, at most MaxHookInput bytes (the
// bytes are returned too, so that they can be handed on).
func ReadHookInput(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxHookInput+1))
	if err != nil {
		return b, fmt.Errorf("read the hook input: %w", err)
	}
	if len(b) > MaxHookInput {
		return b, fmt.Errorf("the hook input is over %d MiB", MaxHookInput>>20)
	}
	return b, nil
}

// ParseHookInput decodes the hook JSON: exactly one JSON value.
func ParseHookInput(b []byte) (HookInput, error) {
	var in HookInput
	if len(bytes.TrimSpace(b)) == 0 {
		return in, errors.New("the hook input is empty (expected the agent's hook JSON on stdin)")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&in); err != nil {
		return in, fmt.Errorf("the hook input is not valid JSON (%v)", err)
	}
	if dec.More() {
		return in, errors.New("the hook input has more than one JSON value")
	}
	return in, nil
}

// ClaudeMessage is the message a Claude Code state event reports.
func ClaudeMessage(event string, in HookInput) string {
	switch event {
	case "UserPromptSubmit":
		return "prompt: " + in.Prompt
	case "StopFailure":
		text := RawText(in.Error) + " " + RawText(in.ErrorDetails)
		if Interrupted(text) {
			return "the turn was interrupted: " + text
		}
		return "the turn failed: " + text
	}
	return in.Message
}

// GeminiMessage is the message a Gemini CLI event reports.
func GeminiMessage(event string, in HookInput) string {
	if event == "BeforeAgent" {
		return "prompt: " + in.Prompt
	}
	return in.Message
}

// Conversation is the agent's own conversation id the hook JSON
// carries, if any.
func (in HookInput) Conversation() string {
	if in.SessionID != "" {
		return in.SessionID
	}
	return in.ThreadID
}

// BadConversation is the line a hook prints on stderr when its input's
// conversation id does not match ConversationPattern ("" when it is
// absent or valid): the id is refused — not passed on, so a restore never
// puts it on a command line — and the state is still reported.
func BadConversation(conversation string) string {
	if conversation == "" || ValidConversation(conversation) {
		return ""
	}
	q := conversation
	if len(q) > 80 {
		q = q[:80]
	}
	return fmt.Sprintf("refused the conversation id %q: it must match %s; the state is reported without it, and a restore will start fresh", q, ConversationPattern)
}

// MaxConversation caps the conversation id passed on (tools.MaxNameBytes;
// TestLiteMatchesTools).
const MaxConversation = 128

// ConversationPattern is what a conversation id must match to be passed
// on and kept (CONTRACT §26; tools.ConversationID): a restore puts it on
// the agent's command line, so it never starts with '-'.
const ConversationPattern = `^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`

// ValidConversation reports whether s matches ConversationPattern
// (written out: termsprawlctl links no regexp).
func ValidConversation(s string) bool {
	if len(s) == 0 || len(s) > MaxConversation {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == ':' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// ReportArgs are agent_report's arguments for a hook's state event (the
// event lets termsprawl derive the state and keep the evidence, CONTRACT
// §20; the state is what the hook means by it), with the agent's
// conversation id when its hook JSON carried one that is valid (kept
// for a restore, CONTRACT §25; an invalid one is left out, see
// BadConversation).
func ReportArgs(agent, event, state, message, conversation string) json.RawMessage {
	if agent == "codex" && event == "notify" {
		event = "agent-turn-complete"
	}
	a := map[string]any{"state": state, "event": event, "message": OneLineText(message, 200)}
	if ValidConversation(conversation) {
		a["conversation"] = conversation
	}
	args, _ := json.Marshal(a)
	return args
}

// RawText is a JSON value as text: a string's contents, else compact JSON.
func RawText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return ""
	}
	return b.String()
}

// KnownEvents lists a state table's events, sorted.
func KnownEvents(m map[string]string) string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// OneLineText squeezes whitespace and cuts s to max runes.
func OneLineText(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}
