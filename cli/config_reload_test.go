package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// badConfigs are the bad inputs of issue 38: an unknown key, a wrong
// type, a bad rule and a budget of -1. Each also allows ls, so a file
// taken by mistake would show.
var badConfigs = []struct {
	name, body string
	line       int
	want       string
}{
	{"unknown key", "[policy]\nallow = [\"Bash(ls:*)\"]\nalow = [\"Bash(x)\"]\n", 3, "policy.alow: unknown key"},
	{"wrong type", "[policy]\nallow = \"Bash(ls:*)\"\n", 2, "policy.allow: a quoted string where a list ([…]) belongs"},
	{"bad rule", "[policy]\nallow = [\"Bash(ls:*)\"]\ndeny = [\"Bash(\"]\n", 3, `policy.deny: rule "Bash(" has no closing ")"`},
	{"budget -1", "[policy]\nallow = [\"Bash(ls:*)\"]\n[[budget]]\nscope = \"fleet\"\ncost_usd = -1.0\n", 5, "budget[0].cost_usd: -1 is not a budget"},
}

// TestE2EConfigRefusedAtReloadAndUp: each bad config.toml is refused
// when termsprawl reloads it (the log names the line; the rules in force
// stay: the running orchestrator still decides by them) and at up (the
// line, the fix and what to run next); a good file then reloads.
func TestE2EConfigRefusedAtReloadAndUp(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	if err := os.MkdirAll(e.state, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(e.state, "config.toml")
	if err := os.WriteFile(conf, []byte("[policy]\nallow = [\"Bash(git status)\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up, errb := e.up()
	verdict := func(req string) string {
		var pt tools.PolicyTest
		if err := json.Unmarshal([]byte(e.must(e.ts, "policy", "test", req, "--json")), &pt); err != nil {
			t.Fatal(err)
		}
		return pt.Verdict
	}
	for _, bad := range badConfigs {
		seen := strings.Count(errb.String(), "config.toml was not reloaded")
		if err := os.WriteFile(conf, []byte(bad.body), 0o600); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 30*time.Second, func() bool {
			return strings.Count(errb.String(), "config.toml was not reloaded") > seen
		}, func() string { return bad.name + ": no refused reload in the log:\n" + errb.String() })
		log := errb.String()
		last := log[strings.LastIndex(log, "config.toml was not reloaded"):]
		if !strings.Contains(last, fmt.Sprintf("config.toml:%d: ", bad.line)) || !strings.Contains(last, strings.ReplaceAll(bad.want, `"`, `\"`)) {
			t.Errorf("%s: the refused reload does not name line %d and %q:\n%s", bad.name, bad.line, bad.want, last)
		}
		if v := verdict("Bash(ls -la)"); v != "undecided" {
			t.Errorf("%s: the refused file's rules count: ls is %s", bad.name, v)
		}
		if v := verdict("Bash(git status)"); v != "allow" {
			t.Errorf("%s: the rules in force were dropped: git status is %s", bad.name, v)
		}
		if code, _, stderr := e.run(e.ts, "config"); code != ExitNo || !strings.Contains(stderr, fmt.Sprintf("config.toml:%d: ", bad.line)) || !strings.Contains(stderr, "keeps the settings it had") {
			t.Errorf("%s: termsprawl config: exit %d %s", bad.name, code, stderr)
		}
	}
	// A good file reloads.
	if err := os.WriteFile(conf, []byte("[policy]\nallow = [\"Bash(ls:*)\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() bool { return verdict("Bash(ls -la)") == "allow" }, func() string { return "the good file did not reload" })
	if v := verdict("Bash(git status)"); v != "undecided" {
		t.Fatalf("after the good reload git status is %s", v)
	}
	e.down(up)

	// At up: refused with the line, the fix and what to run next.
	for _, bad := range badConfigs {
		if err := os.WriteFile(conf, []byte(bad.body), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := e.run(e.ts, "up")
		if code != ExitNo || !strings.Contains(stderr, fmt.Sprintf("config.toml:%d: %s", bad.line, bad.want)) || !strings.Contains(stderr, "run `termsprawl up` again") {
			t.Errorf("up with %s: exit %d %s", bad.name, code, stderr)
		}
	}
}
