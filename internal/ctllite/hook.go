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
		return "the turn failed: " + RawText(in.Error) + " " + RawText(in.ErrorDetails)
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

// MaxConversation caps the conversation id passed on (tools.MaxNameBytes;
// TestLiteMatchesTools).
const MaxConversation = 128

// ReportArgs are agent_report's arguments for a hook's state event (the
// event lets termsprawl derive the state and keep the evidence, CONTRACT
// §20; the state is what the hook means by it), with the agent's
// conversation id when its hook JSON carried one (kept for a restore,
// CONTRACT §25).
func ReportArgs(agent, event, state, message, conversation string) json.RawMessage {
	if agent == "codex" && event == "notify" {
		event = "agent-turn-complete"
	}
	a := map[string]any{"state": state, "event": event, "message": OneLineText(message, 200)}
	if conversation != "" && len(conversation) <= MaxConversation {
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
