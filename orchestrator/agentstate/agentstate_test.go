package agentstate

import (
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

func ev(src, event string, sec int) tools.Evidence {
	return tools.Evidence{Source: src, Event: event, At: time.Unix(int64(1000+sec), 0).UTC().Format(time.RFC3339Nano)}
}

func TestDerive(t *testing.T) {
	t.Parallel()
	P, H, D, S := tools.SourceProcess, tools.SourceHook, tools.SourceDialog, tools.SourceScreen
	cases := []struct {
		name  string
		in    []tools.Evidence
		want  string
		since int
		human bool
	}{
		{"nothing", nil, "", -1000, false},
		{"launched", []tools.Evidence{ev(P, ProcLaunched, 0)}, tools.AgentStarting, 0, false},
		{"a hook before the launch returned keeps its state", []tools.Evidence{ev(H, "UserPromptSubmit", 1), ev(P, ProcLaunched, 2)}, tools.AgentWorking, 1, false},
		{"session start", []tools.Evidence{ev(P, ProcLaunched, 0), ev(H, "SessionStart", 2)}, tools.AgentIdle, 2, false},
		{"a turn", []tools.Evidence{ev(P, ProcLaunched, 0), ev(H, "SessionStart", 1), ev(H, "UserPromptSubmit", 2), ev(H, "Stop", 9)}, tools.AgentIdle, 9, false},
		{"working", []tools.Evidence{ev(P, ProcLaunched, 0), ev(H, "UserPromptSubmit", 2), ev(H, "PostToolUse", 4)}, tools.AgentWorking, 2, false},
		{"permission", []tools.Evidence{ev(H, "UserPromptSubmit", 2), ev(H, "PermissionRequest", 3), ev(D, DialogOpened, 3)}, tools.AgentWaiting, 3, true},
		{"pre tool use keeps waiting", []tools.Evidence{ev(H, "UserPromptSubmit", 2), ev(D, DialogOpened, 3), ev(H, "PreToolUse", 4)}, tools.AgentWaiting, 3, true},
		{"answered", []tools.Evidence{ev(H, "UserPromptSubmit", 2), ev(D, DialogOpened, 3), ev(D, DialogAnswered, 5)}, tools.AgentWorking, 5, false},
		{"timed out", []tools.Evidence{ev(H, "UserPromptSubmit", 2), ev(D, DialogOpened, 3), ev(D, DialogTimedOut, 5)}, tools.AgentWorking, 5, false},
		{"answer after the turn ended changes nothing", []tools.Evidence{ev(D, DialogOpened, 3), ev(H, "Stop", 4), ev(D, DialogAnswered, 5)}, tools.AgentIdle, 4, false},
		{"needs input", []tools.Evidence{ev(H, "Stop", 2), ev(H, "Notification", 60)}, tools.AgentWaiting, 60, true},
		{"stop failure", []tools.Evidence{ev(H, "UserPromptSubmit", 2), ev(H, "StopFailure", 3)}, tools.AgentError, 3, false},
		{"error then a new prompt", []tools.Evidence{ev(H, "StopFailure", 3), ev(H, "UserPromptSubmit", 4)}, tools.AgentWorking, 4, false},
		{"interrupt seen on the screen", []tools.Evidence{ev(H, "UserPromptSubmit", 2), ev(S, ScreenTurnEnded, 5)}, tools.AgentIdle, 5, false},
		{"api error seen on the screen", []tools.Evidence{ev(H, "UserPromptSubmit", 2), ev(S, ScreenAPIError, 5)}, tools.AgentError, 5, false},
		{"the screen does not end a wait", []tools.Evidence{ev(D, DialogOpened, 2), ev(S, ScreenTurnEnded, 5)}, tools.AgentWaiting, 2, true},
		{"exited whatever the last hook", []tools.Evidence{ev(H, "UserPromptSubmit", 2), ev(P, ProcExited, 5)}, tools.AgentExited, 5, false},
		{"crashed", []tools.Evidence{ev(D, DialogOpened, 2), ev(P, ProcCrashed, 5)}, tools.AgentExited, 5, false},
		{"never working again", []tools.Evidence{ev(P, ProcExited, 5), ev(H, "UserPromptSubmit", 6), ev(D, DialogOpened, 7), ev(H, "Stop", 8)}, tools.AgentExited, 5, false},
		{"unknown hook changes nothing", []tools.Evidence{ev(H, "UserPromptSubmit", 2), ev(H, "NoSuchEvent", 3)}, tools.AgentWorking, 2, false},
		{"known no-op hook", []tools.Evidence{ev(H, "Stop", 2), ev(H, "SessionEnd", 3)}, tools.AgentIdle, 2, false},
		{"reports", []tools.Evidence{ev(H, "report:working", 2), ev(H, "report:waiting", 3)}, tools.AgentWaiting, 3, true},
		{"bad report", []tools.Evidence{ev(H, "report:working", 2), ev(H, "report:asleep", 3)}, tools.AgentWorking, 2, false},
		{"gemini", []tools.Evidence{ev(H, "BeforeAgent", 2), ev(H, "AfterAgent", 3)}, tools.AgentIdle, 3, false},
		{"codex", []tools.Evidence{ev(P, ProcLaunched, 0), ev(H, "agent-turn-complete", 3)}, tools.AgentIdle, 3, false},
		{"ready from the screen", []tools.Evidence{ev(P, ProcLaunched, 0), ev(S, ScreenReady, 2)}, tools.AgentIdle, 2, false},
		{"ready only when starting", []tools.Evidence{ev(H, "UserPromptSubmit", 1), ev(S, ScreenReady, 2)}, tools.AgentWorking, 1, false},
		{"launched twice", []tools.Evidence{ev(P, ProcLaunched, 0), ev(H, "Stop", 1), ev(P, ProcLaunched, 2)}, tools.AgentIdle, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Derive(c.in)
			if r.State != c.want || r.NeedsHuman != c.human {
				t.Fatalf("state %q needs_human %v, want %q %v", r.State, r.NeedsHuman, c.want, c.human)
			}
			if c.want != "" && !r.Since.Equal(time.Unix(int64(1000+c.since), 0)) {
				t.Fatalf("since %v, want second %d", r.Since, c.since)
			}
		})
	}
}

func TestKnownHook(t *testing.T) {
	t.Parallel()
	for ev, want := range map[string]bool{"Stop": true, "StopFailure": true, "SessionEnd": true, "report:error": true,
		"report:exited": false, "NoSuchEvent": false, "": false} {
		if got := KnownHook(ev); got != want {
			t.Errorf("KnownHook(%q) = %v", ev, got)
		}
	}
}

func TestTurnEnded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		lines []string
		ended bool
		event string
	}{
		{"busy", []string{"✻ Thinking… (3s · esc to interrupt)", "> "}, false, ""},
		{"gemini busy", []string{"⠋ Working (esc to cancel, 2s)", "> "}, false, ""},
		{"no prompt", []string{"some output", ""}, false, ""},
		{"prompt back", []string{"⏺ done", "", "────", "> ", "────", "  ? for shortcuts"}, true, ScreenTurnEnded},
		{"boxed prompt", []string{"╭───╮", "│ > │", "╰───╯"}, true, ScreenTurnEnded},
		{"interrupted", []string{"  ⎿  Interrupted · What should Claude do instead?", "❯ "}, true, ScreenTurnEnded},
		{"api error", []string{"  ⎿  API Error: 500 {\"type\":\"error\"}", "> "}, true, ScreenAPIError},
		// Esc during a request: an interrupt, not a failed turn (issue 39).
		{"esc aborted", []string{"  ⎿  API Error: Request was aborted.", "  ⎿  Interrupted · What should Claude do instead?", "> "}, true, ScreenTurnEnded},
		{"codex", []string{"• done", "› Ask Codex"}, true, ScreenTurnEnded},
		{"codex resuming", []string{"› an old message", "• done", "", "• Resuming session…", "› Ask Codex"}, false, ""},
		// Codex 0.169.0, measured: an interrupt and a failed turn are both
		// a "■" cell; the latest one tells the turn that just ended.
		{"codex interrupted", []string{"› please be slow", "■ Conversation interrupted - use /feedback if something went wrong", "› Ask Codex to do anything"}, true, ScreenTurnEnded},
		{"codex api error after an old interrupt", []string{"■ Conversation interrupted - use /feedback", "› please fail",
			"■ We’re currently experiencing high demand, which may cause temporary errors.", "› Ask Codex to do anything"}, true, ScreenAPIError},
		{"interrupt after an old api error", []string{"  ⎿  API Error: 500", "> again", "  ⎿  Interrupted · What should Claude do instead?", "> "}, true, ScreenTurnEnded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ended, event, detail := TurnEnded(c.lines)
			if ended != c.ended || event != c.event {
				t.Fatalf("TurnEnded = %v %q %q", ended, event, detail)
			}
		})
	}
}
