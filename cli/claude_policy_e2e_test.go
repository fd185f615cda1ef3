package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator/policy"
	"github.com/termsprawl/termsprawl/tools"
)

// TestClaudeCodePolicyAndUsage runs real Claude Code against the
// loopback stand-in of its API, launched by termsprawl: a fleet rule
// allows its Bash command with no human (no dialog opens), a deny rule
// blocks another with the rule's reason reaching the model, and its own
// OpenTelemetry exporter, set up as termsprawl sets it, reports the
// turn's tokens and cost to termsprawl's receiver.
func TestClaudeCodePolicyAndUsage(t *testing.T) {
	t.Parallel()
	e, fake, _, work := newClaudeE2E(t, claudeCodePackage, markerScript)
	// claudeEnv without the switches that turn telemetry off.
	e.env = slices.DeleteFunc(e.env, func(kv string) bool {
		return strings.HasPrefix(kv, "DISABLE_TELEMETRY=") || strings.HasPrefix(kv, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=")
	})
	allowed, denied := filepath.Join(work, "allowed"), filepath.Join(work, "denied")
	if err := os.MkdirAll(e.state, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := "[policy]\nallow = [\"Bash(touch " + allowed + ")\"]\ndeny = [\"Bash(touch " + denied + ")\"]\n"
	if err := os.WriteFile(filepath.Join(e.state, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	up, _ := e.up()
	defer e.down(up)

	// Allowed by the fleet's rule: the file is made, no dialog opened.
	node := strings.TrimSpace(e.must(e.ts, "agent", "claude", "--name", "allow", "--cwd", work, "--", "claude", "-p", "please create "+allowed))
	e.waitExited(node)
	if _, err := os.Stat(allowed); err != nil {
		_, snap, _ := e.run(e.ts, "snapshot", node)
		t.Fatalf("the allowed command did not run: %v\n%s", err, snap)
	}
	l, _, _ := policy.ReadAudit(e.state, policy.Filter{Node: node})
	if len(l) != 1 || l[0].By != "rule" || l[0].Decision != "allow" || !strings.Contains(l[0].Input, allowed) {
		t.Fatalf("audit of the allowed run: %+v", l)
	}

	// Denied by a rule: the model is told the rule.
	node2 := strings.TrimSpace(e.must(e.ts, "agent", "claude", "--name", "deny", "--cwd", work, "--", "claude", "-p", "please create "+denied))
	e.waitExited(node2)
	if _, err := os.Stat(denied); err == nil {
		t.Fatal("the denied command ran")
	}
	text, isErr := toolResultFor(fake, denied)
	if !isErr || !strings.Contains(text, "policy") || !strings.Contains(text, "Bash(touch "+denied+")") {
		t.Fatalf("the model was not told the rule: is_error=%v %q", isErr, text)
	}
	var dl tools.DialogList
	if err := json.Unmarshal([]byte(e.must(e.ts, "dialogs", "--json")), &dl); err != nil || len(dl.Dialogs) != 0 {
		t.Fatalf("a dialog opened though rules decided: %+v %v", dl, err)
	}

	// Usage from Claude Code's own exporter: known, with tokens and cost.
	var a tools.AgentInfo
	testenv.Eventually(t, 60*time.Second, func() bool {
		a = e.whyOf(node)
		u := a.Usage
		return u != nil && u.Known && u.Life.InputTokens > 0 && u.Life.OutputTokens > 0 && u.Life.CostUSD != nil && *u.Life.CostUSD > 0
	}, func() string { return fmt.Sprintf("no usage from Claude Code's exporter: %+v", a.Usage) })
	if out := e.must(e.ts, "usage"); !strings.Contains(out, node) || !strings.Contains(out, "$") {
		t.Fatalf("termsprawl usage:\n%s", out)
	}
	if out := e.must(e.ts, "ls"); !strings.Contains(out, "COST") || !strings.Contains(out, "$0.") {
		t.Fatalf("ls:\n%s", out)
	}
}
