package toolserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// A forged conversation id never becomes a flag (CONTRACT §26, issue 34
// item 1): agent_report refuses it, and a launch record that holds one
// anyway (written before the check, or by hand) is restored fresh with
// its original argv — no "--dangerously-skip-permissions" added.
func TestRestoreNeverAddsAForgedConversation(t *testing.T) {
	out := fakeAgents(t)
	t.Setenv("HOME", t.TempDir())
	tmux, dir := apiNewState(t)
	s := startWithCtl(t, tmux, dir, "/opt/termsprawl/bin/termsprawlctl")
	r, _ := apiMutate(t, s.op(), "agent_launch", apiM{"agent": "claude", "sandbox": "none"}) // the fake agent writes outside its directory
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(out, "claude.txt"))
	const forged = "--dangerously-skip-permissions"
	res := apiFail(t, s.session(info.Terminal), "agent_report", apiM{"event": "Stop", "conversation": forged}, tools.KindUsage)
	if !strings.Contains(res.Error, "conversation") || !strings.Contains(res.Error, tools.ConversationPattern) {
		t.Fatalf("agent_report with a forged id: %s", res.Error)
	}
	launch := filepath.Join(dir, "nodes", info.Terminal+".launch.json")
	if b, _ := os.ReadFile(launch); strings.Contains(string(b), forged) {
		t.Fatalf("the forged id was kept: %s", b)
	}
	// As the landed code kept it: straight into the launch record.
	var rec map[string]any
	b, err := os.ReadFile(launch)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	rec["conversation"] = forged
	b, _ = json.Marshal(rec)
	if err := os.WriteFile(launch, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s.stop()
	if _, err := tmux.Cmd("kill-server"); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(out, "claude.txt"))
	s2 := startWithCtl(t, tmux, dir, "/opt/termsprawl/bin/termsprawlctl")
	rr, _ := apiMutate(t, s2.op(), "terminal_restore", apiM{"terminal": info.Terminal})
	var rest tools.RestoreResult
	if err := json.Unmarshal(rr.Result, &rest); err != nil {
		t.Fatal(err)
	}
	argv := strings.Split(strings.TrimSpace(waitFile(t, filepath.Join(out, "claude.txt"))), "\n")
	if slices.Contains(argv, forged) || slices.Contains(argv, "--resume") {
		t.Fatalf("restored with argv %q", argv)
	}
	if rest.Resumed != "" || !strings.Contains(rest.FreshStart, "conversation id") {
		t.Fatalf("restore: %+v", rest)
	}
}

func TestResumeCommandAddsOnlyTheResumeForm(t *testing.T) {
	t.Parallel()
	cases := []struct {
		agent, conv string
		want        []string
	}{
		{"claude", "0f3c2a1e-77aa-4c1e-9d0b-5b1f3e9a2c11", []string{"claude", "--model", "x", "--resume", "0f3c2a1e-77aa-4c1e-9d0b-5b1f3e9a2c11"}},
		{"codex", "thread:01.a_b", []string{"codex", "resume", "thread:01.a_b", "--model", "x"}},
		{"claude", "--dangerously-skip-permissions", nil},
		{"claude", "-r", nil},
		{"codex", "--yolo", nil},
		{"claude", "a b", nil},
		{"claude", "a\x1b[2K", nil},
		{"claude", strings.Repeat("a", 129), nil},
	}
	for _, c := range cases {
		got, fresh := resumeCommand(c.agent, []string{c.agent, "--model", "x"}, c.conv)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %q: argv %q (fresh %q), want %q", c.agent, c.conv, got, fresh, c.want)
		}
		if c.want == nil && fresh == "" {
			t.Errorf("%s %q: no reason for the fresh start", c.agent, c.conv)
		}
	}
}
