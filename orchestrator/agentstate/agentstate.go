// Package agentstate derives one state per agent from the evidence at
// hand (CONTRACT §20): the agent's hooks, the dialogs it opened, its
// process and its screen. Derive is a pure function — evidence in, state
// out — so the rules are table-tested; the tool server feeds it.
//
// It knows nothing of nodes, tmux or the tool server.
package agentstate

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// Result is a derived state.
type Result struct {
	State      string
	Since      time.Time
	NeedsHuman bool
}

// Process events.
const (
	ProcLaunched = "launched"
	ProcExited   = "exited"
	ProcCrashed  = "crashed"
)

// Dialog events.
const (
	DialogOpened   = "opened"
	DialogAnswered = "answered"
	DialogTimedOut = "timed_out"
)

// Screen events: a turn that ended without its end hook.
const (
	ScreenTurnEnded = "turn_ended"
	ScreenAPIError  = "api_error"
	// ScreenReady: a starting agent's prompt is up (quiet, no busy
	// marker): idle, for agents without a start hook.
	ScreenReady = "ready"
)

// ReportPrefix marks the evidence of an agent_report that named a state
// rather than an event: "report:idle".
const ReportPrefix = "report:"

// hookStates maps the hook events termsprawl knows to the state each
// sets; "" means known and changing nothing. Claude Code's, Gemini
// CLI's (BeforeAgent, AfterAgent) and Codex's notify (agent-turn-complete).
var hookStates = map[string]string{
	"SessionStart":     tools.AgentIdle,
	"UserPromptSubmit": tools.AgentWorking,
	"PreToolUse":       tools.AgentWorking,
	"PostToolUse":      tools.AgentWorking,
	"SubagentStart":    tools.AgentWorking,
	"Notification":     tools.AgentWaiting,
	// Claude Code's idle-prompt notification (the hook reports it under
	// this name): at its prompt, nothing changes (CONTRACT §20).
	"IdleNotification":  "",
	"Stop":              tools.AgentIdle,
	"StopFailure":       tools.AgentError,
	"PermissionRequest": "", // the dialog it opens is the evidence
	"PermissionDenied":  "",
	"SessionEnd":        "", // the process says when it is gone
	"SubagentStop":      "",
	"PreCompact":        "",
	"PostCompact":       "",

	"BeforeAgent": tools.AgentWorking,
	"AfterAgent":  tools.AgentIdle,

	"agent-turn-complete": tools.AgentIdle,
}

// KnownHook reports whether termsprawl knows a hook event (or a report
// of a state). Unknown events are logged and ignored by the caller.
func KnownHook(event string) bool {
	if st, ok := strings.CutPrefix(event, ReportPrefix); ok {
		switch st {
		case tools.AgentIdle, tools.AgentWorking, tools.AgentWaiting, tools.AgentError:
			return true
		}
		return false
	}
	_, ok := hookStates[event]
	return ok
}

// Step applies one piece of evidence to cur. It returns the new result
// and whether the state changed. An exited agent stays exited.
func Step(cur Result, ev tools.Evidence) (Result, bool) {
	if cur.State == tools.AgentExited {
		return cur, false
	}
	next := target(cur.State, ev)
	if next == "" || next == cur.State {
		return cur, false
	}
	at, err := time.Parse(time.RFC3339Nano, ev.At)
	if err != nil {
		at = cur.Since
	}
	return Result{State: next, Since: at, NeedsHuman: next == tools.AgentWaiting}, true
}

// target is the state ev moves cur to ("" for none).
func target(cur string, ev tools.Evidence) string {
	switch ev.Source {
	case tools.SourceProcess:
		switch ev.Event {
		case ProcLaunched:
			if cur == "" {
				return tools.AgentStarting
			}
		case ProcExited, ProcCrashed:
			return tools.AgentExited
		}
	case tools.SourceHook:
		if st, ok := strings.CutPrefix(ev.Event, ReportPrefix); ok {
			if KnownHook(ev.Event) {
				return st
			}
			return ""
		}
		st := hookStates[ev.Event]
		if st == tools.AgentWorking && cur == tools.AgentWaiting && ev.Event == "PreToolUse" {
			// A tool about to run may still ask: the dialog's end says
			// when the human answered.
			return ""
		}
		return st
	case tools.SourceDialog:
		switch ev.Event {
		case DialogOpened:
			return tools.AgentWaiting
		case DialogAnswered, DialogTimedOut:
			if cur == tools.AgentWaiting {
				return tools.AgentWorking
			}
		}
	case tools.SourceScreen:
		if st, ok := strings.CutPrefix(ev.Event, RulePrefix); ok {
			switch st {
			case tools.AgentIdle, tools.AgentWorking, tools.AgentWaiting:
				return st
			}
			return ""
		}
		if ev.Event == ScreenReady {
			if cur == tools.AgentStarting {
				return tools.AgentIdle
			}
			return ""
		}
		if ev.Event == ScreenTurnFailed {
			if cur == tools.AgentIdle || cur == tools.AgentWorking {
				return tools.AgentError
			}
			return ""
		}
		if cur != tools.AgentWorking {
			return ""
		}
		switch ev.Event {
		case ScreenTurnEnded:
			return tools.AgentIdle
		case ScreenAPIError:
			return tools.AgentError
		}
	}
	return ""
}

// Derive replays evidence, oldest first, from no state.
func Derive(evidence []tools.Evidence) Result {
	var r Result
	for _, ev := range evidence {
		r, _ = Step(r, ev)
	}
	return r
}

// busyMarkers are what agents' TUIs show while a turn runs (Claude Code
// and Codex: "esc to interrupt"; Gemini CLI: "esc to cancel"), or while
// they cannot take input yet: Codex 0.169 resuming a conversation draws
// its composer and the old messages (each "› …", like its prompt) while
// it still says "Resuming session…", and drops what is typed then.
var busyMarkers = []string{"esc to interrupt", "esc to cancel", "resuming session"}

// promptMarks start the input line of an agent's TUI once its prompt is
// back (Claude Code "> " or "❯ ", Codex "› ").
var promptMarks = []string{">", "❯", "›"}

// apiErrorMarks are how the TUIs say a turn failed on the model's API.
var apiErrorMarks = []string{"API Error", "api error", "APIError"}

// TurnEnded judges a quiet screen of a working agent: ended is true when
// no busy marker shows and the prompt is back; event says how
// (ScreenAPIError when the screen shows an API error, else
// ScreenTurnEnded) and detail what was seen.
func TurnEnded(lines []string) (ended bool, event, detail string) {
	prompt := false
	// The latest of an API error and an interrupt on the screen says how
	// the turn ended (an older one belongs to an earlier turn).
	apiErr, interrupted, lastErr, lastInt := "", false, -1, -1
	for i, l := range lines {
		low := strings.ToLower(l)
		for _, m := range busyMarkers {
			if strings.Contains(low, m) {
				return false, "", ""
			}
		}
		t := strings.TrimLeft(l, " │|")
		for _, m := range promptMarks {
			if strings.HasPrefix(t, m) {
				prompt = true
			}
		}
		switch {
		// "API Error: Request was aborted." is the human's Esc: an
		// interrupt ends a turn, it does not fail it (CONTRACT §20).
		case strings.Contains(low, "interrupt"), strings.Contains(low, "abort") && isAPIError(l, t):
			interrupted, lastInt = true, i
		case isAPIError(l, t):
			apiErr, lastErr = strings.TrimSpace(l), i
		}
	}
	if !prompt {
		return false, "", ""
	}
	switch {
	case apiErr != "" && lastErr > lastInt:
		return true, ScreenAPIError, "quiet, the prompt back, and the screen shows: " + cut(apiErr, 200)
	case interrupted:
		return true, ScreenTurnEnded, "quiet, the prompt back after an interrupt, no end hook"
	}
	return true, ScreenTurnEnded, "quiet, the prompt back, no end hook"
}

// isAPIError reports whether a screen line says a turn failed: the
// TUIs' API error texts, or Codex's error cell ("■ " and its message;
// an interrupt is told the same way and is caught before).
func isAPIError(l, trimmed string) bool {
	for _, m := range apiErrorMarks {
		if strings.Contains(l, m) {
			return true
		}
	}
	return strings.HasPrefix(trimmed, "■ ")
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Screen rules (CONTRACT §29): a user's [[agent_rule]] sets an agent's
// state from its screen once the output is quiet. The evidence's event is
// RulePrefix and the state ("rule:waiting"); its detail names the rule.
const RulePrefix = "rule:"

// RuleQuiet is how long an agent's output must be still before its
// screen rules are matched.
const RuleQuiet = 500 * time.Millisecond

// RuleLines is how many of the screen's last non-blank lines a rule sees.
const RuleLines = 5

// Rule is one screen rule: the agent kind it is for, the state it sets,
// its pattern, and its name for why ("agent_rule[2] (config.toml line 14)").
type Rule struct {
	Kind, State, Name string
	Pattern           *regexp.Regexp
}

// RuleText is what screen rules are matched against: the screen's last
// RuleLines non-blank lines, each without trailing blanks, joined by
// "\n" — so `$` is the end of the last line with text (a prompt waiting
// at the cursor).
func RuleText(lines []string) string {
	end := len(lines)
	for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	var keep []string
	for i := end - 1; i >= 0 && len(keep) < RuleLines; i-- {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		keep = append(keep, strings.TrimRight(lines[i], " \t"))
	}
	slices.Reverse(keep)
	return strings.Join(keep, "\n")
}

// MatchRule finds the rule for kind that matches the screen: rules are
// tried newest (last) first. It returns the rule's index (-1 for none)
// and the text it matched.
func MatchRule(rules []Rule, kind string, lines []string) (int, string) {
	text := RuleText(lines)
	for i := len(rules) - 1; i >= 0; i-- {
		r := rules[i]
		if r.Kind != kind || r.Pattern == nil {
			continue
		}
		if loc := r.Pattern.FindStringIndex(text); loc != nil {
			return i, text[loc[0]:loc[1]]
		}
	}
	return -1, ""
}

// RuleEvidence is the evidence of a matched rule.
func RuleEvidence(r Rule, matched string) tools.Evidence {
	return tools.Evidence{Source: tools.SourceScreen, Event: RulePrefix + r.State,
		Detail: cut(fmt.Sprintf("%s: pattern %q matched %q", r.Name, r.Pattern.String(), matched), 300)}
}

// ScreenTurnFailed: a turn that its end hook called ended was a failure
// on the screen (Gemini CLI fires AfterAgent after an API error too): it
// moves idle to error.
const ScreenTurnFailed = "turn_failed"

// FailedAfterLastPrompt finds an API error shown after the last prompt
// the user submitted (a line "> TEXT"): the error line, or "".
func FailedAfterLastPrompt(lines []string) string {
	last := -1
	for i, l := range lines {
		t := strings.TrimSpace(strings.TrimLeft(l, " │|"))
		if rest, ok := strings.CutPrefix(t, "> "); ok && strings.TrimSpace(rest) != "" {
			last = i
		}
	}
	if last < 0 {
		return ""
	}
	for _, l := range lines[last+1:] {
		for _, m := range apiErrorMarks {
			if strings.Contains(l, m) {
				return strings.TrimSpace(l)
			}
		}
	}
	return ""
}
