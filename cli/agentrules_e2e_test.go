package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// A custom agent gets its state from config.toml's screen rules
// (CONTRACT §29): a program that stops at a (y/n) prompt is waiting
// within seconds, and why names the rule; answered, it is idle by the
// other rule.
func TestCustomAgentScreenRules(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	if err := os.MkdirAll(e.state, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "# screen rules\n\n[[agent_rule]]\nkind = \"custom\"\nstate = \"idle\"\npattern = '(?m)^ready> ?$'\n\n" +
		"[[agent_rule]]\nkind = \"custom\"\nstate = \"waiting\"\npattern = '\\(y/n\\)\\s*$'\n"
	if err := os.WriteFile(filepath.Join(e.state, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	up, _ := e.up()
	defer e.down(up)
	prog := `printf 'working...\n'; sleep 1; printf 'Overwrite the file? (y/n) '; read a; printf 'got %s\nready> ' "$a"; exec sleep 600`
	node := strings.TrimSpace(e.must(e.ts, "agent", "custom", "--name", "yn", "--", "sh", "-c", prog))
	start := time.Now()
	a := e.waitWhy(node, 10*time.Second, "waiting by the (y/n) rule", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentWaiting && a.NeedsHuman
	})
	t.Logf("waiting seen %v after the launch", time.Since(start).Round(time.Millisecond))
	if len(a.Why) == 0 || a.Why[0].Source != tools.SourceScreen || !strings.Contains(a.Why[0].Detail, "agent_rule[1] (config.toml line 11)") {
		t.Fatalf("why does not name the rule: %+v", a.Why)
	}
	out := e.must(e.ts, "why", node)
	if !strings.Contains(out, "agent_rule[1]") {
		t.Fatalf("termsprawl why does not name the rule:\n%s", out)
	}
	e.must(e.ts, "send", node, "y")
	a = e.waitWhy(node, 10*time.Second, "idle by the ready> rule", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentIdle && len(a.Why) > 0 && strings.Contains(a.Why[0].Detail, "agent_rule[0]")
	})
	if a.NeedsHuman {
		t.Fatalf("idle but needs a human: %+v", a)
	}
}
