package toolserver

import (
	"slices"
	"strings"
	"testing"
)

func TestAgentKindsResumeAndFork(t *testing.T) {
	t.Parallel()
	const id = "01a24f14-b2dd-7ab3-a383-6aff78d690d5"
	for _, tc := range []struct {
		kind         string
		cmd          []string
		resume, fork []string
	}{
		{"claude", []string{"claude", "--model", "x"}, []string{"claude", "--model", "x", "--resume", id}, []string{"claude", "--model", "x", "--resume", id, "--fork-session"}},
		{"codex", []string{"codex", "-m", "gpt-5"}, []string{"codex", "resume", id, "-m", "gpt-5"}, []string{"codex", "fork", id, "-m", "gpt-5"}},
		{"gemini", []string{"gemini"}, []string{"gemini", "--resume", id}, nil},
		{"opencode", []string{"opencode"}, nil, []string{"opencode", "--session", id, "--fork"}},
	} {
		got, why := resumeCommand(tc.kind, tc.cmd, id)
		if tc.resume != nil && (!slices.Equal(got, tc.resume) || why != "") {
			t.Errorf("%s resume: %q %q, want %q", tc.kind, got, why, tc.resume)
		}
		f, ok := AgentFork(tc.kind, tc.cmd, id)
		if ok != (tc.fork != nil) || !slices.Equal(f, tc.fork) {
			t.Errorf("%s fork: %q %v, want %q", tc.kind, f, ok, tc.fork)
		}
	}
	// A reported id that is not a checked one never reaches a command line.
	for _, bad := range []string{"--dangerously-bypass-approvals-and-sandbox", "a b", "", "x\x1b[2J"} {
		if got, why := resumeCommand("codex", []string{"codex"}, bad); got != nil || why == "" {
			t.Errorf("resume with %q: %q", bad, got)
		}
		if _, ok := AgentFork("claude", []string{"claude"}, bad); ok {
			t.Errorf("fork with %q allowed", bad)
		}
	}
	if _, why := resumeCommand("codex", []string{"codex"}, "x\x1b[2J"); strings.Contains(why, "\x1b") {
		t.Errorf("the refusal shows the id raw: %q", why)
	}
}

func TestAgentTelemetryTable(t *testing.T) {
	t.Parallel()
	args, env, ok := AgentTelemetry("codex", "http://127.0.0.1:4318", "Authorization=Bearer x")
	if !ok || len(env) != 0 || !strings.Contains(strings.Join(args, " "), `endpoint="http://127.0.0.1:4318/v1/logs"`) {
		t.Fatalf("codex: %q %v %v", args, env, ok)
	}
	if _, env, ok := AgentTelemetry("gemini", "http://127.0.0.1:4318", "a=b"); !ok || env["GEMINI_TELEMETRY_OTLP_ENDPOINT"] != "http://127.0.0.1:4318" {
		t.Fatalf("gemini: %v", env)
	}
	if _, _, ok := AgentTelemetry("opencode", "http://x", "a=b"); ok {
		t.Fatalf("opencode has no telemetry to point")
	}
}
