package agentstate

import (
	"regexp"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

func TestMatchRule(t *testing.T) {
	t.Parallel()
	rules := []Rule{
		{Kind: "custom", State: tools.AgentWaiting, Name: "r0", Pattern: regexp.MustCompile(`\(y/n\)\s*$`)},
		{Kind: "custom", State: tools.AgentIdle, Name: "r1", Pattern: regexp.MustCompile(`(?m)^> ?$`)},
		{Kind: "codex", State: tools.AgentWaiting, Name: "r2", Pattern: regexp.MustCompile(`Allow`)},
		{Kind: "custom", State: tools.AgentWorking, Name: "r3", Pattern: regexp.MustCompile(`building`)},
	}
	for _, tc := range []struct {
		name, kind string
		lines      []string
		want       int
		matched    string
	}{
		{"prompt at the end", "custom", []string{"hello", "Continue? (y/n) ", "", ""}, 0, "(y/n)"},
		{"prompt scrolled up is not the end", "custom", []string{"Continue? (y/n)", "y", "done"}, -1, ""},
		{"newest rule first", "custom", []string{"building", "> "}, 3, "building"},
		{"idle prompt", "custom", []string{"out", ">"}, 1, ">"},
		{"other kind's rule", "codex", []string{"Allow this? (y/n)"}, 2, "Allow"},
		{"no rule of the kind", "gemini", []string{"(y/n)"}, -1, ""},
		{"only the last lines", "custom", append([]string{"building"}, strings.Split("a b c d e f", " ")...), -1, ""},
		{"empty screen", "custom", nil, -1, ""},
	} {
		i, m := MatchRule(rules, tc.kind, tc.lines)
		if i != tc.want || m != tc.matched {
			t.Errorf("%s: rule %d %q, want %d %q", tc.name, i, m, tc.want, tc.matched)
		}
	}
}

func TestRuleEvidenceSetsState(t *testing.T) {
	t.Parallel()
	r := Rule{Kind: "custom", State: tools.AgentWaiting, Name: "agent_rule[0] (config.toml line 3)", Pattern: regexp.MustCompile(`\(y/n\)`)}
	ev := RuleEvidence(r, "(y/n)")
	ev.At = "2026-12-07T06:00:00Z"
	if !strings.Contains(ev.Detail, "agent_rule[0] (config.toml line 3)") || ev.Source != tools.SourceScreen {
		t.Fatalf("evidence %+v", ev)
	}
	for _, from := range []string{"", tools.AgentStarting, tools.AgentIdle, tools.AgentWorking} {
		got, changed := Step(Result{State: from}, ev)
		if !changed || got.State != tools.AgentWaiting || !got.NeedsHuman {
			t.Errorf("from %q: %+v %v", from, got, changed)
		}
	}
	if got, changed := Step(Result{State: tools.AgentExited}, ev); changed || got.State != tools.AgentExited {
		t.Errorf("an exited agent moved: %+v", got)
	}
	bad := tools.Evidence{Source: tools.SourceScreen, Event: RulePrefix + "exited"}
	if _, changed := Step(Result{State: tools.AgentIdle}, bad); changed {
		t.Errorf("a rule event with a state rules cannot set moved the state")
	}
}

func TestFailedAfterLastPrompt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"gemini 400", []string{" > please fail", "", `✕ [API Error: {"error":{"code":400}}]`, "", " *   Type your message"}, `✕ [API Error: {"error":{"code":400}}]`},
		{"an old error, a good turn after", []string{" > please fail", "✕ [API Error: 500]", " > say hi", "✦ hello", " *   Type your message"}, ""},
		{"no prompt", []string{"✕ [API Error: 500]"}, ""},
	} {
		if got := FailedAfterLastPrompt(tc.lines); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	ev := tools.Evidence{Source: tools.SourceScreen, Event: ScreenTurnFailed, At: "2026-12-07T06:00:00Z"}
	if got, ok := Step(Result{State: tools.AgentIdle}, ev); !ok || got.State != tools.AgentError {
		t.Fatalf("idle + a failed turn: %+v", got)
	}
	if _, ok := Step(Result{State: tools.AgentWaiting}, ev); ok {
		t.Fatalf("a waiting agent moved on an old failure")
	}
}
