package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// TestGeminiUsage runs real Gemini CLI (`gemini -p`) launched by
// termsprawl against the loopback stand-in of its API: its own
// OpenTelemetry exporter, switched on and pointed at termsprawl's
// receiver with the node's token as termsprawl sets it, reports the
// turn's tokens (Gemini CLI sends no cost: tokens, cost unknown).
func TestGeminiUsage(t *testing.T) {
	t.Parallel()
	e, fake, _, work := newGeminiE2E(t, `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`)
	up, _ := e.up()
	defer e.down(up)

	node := strings.TrimSpace(e.must(e.ts, "agent", "gemini", "--name", "gu", "--cwd", work, "--env", "GEMINI_API_KEY=gemini-dummy-VALUE",
		"--env", "GOOGLE_GEMINI_BASE_URL="+fake.URL, "--env", "GEMINI_CLI_TRUST_WORKSPACE=true", "--", "gemini", "-p", "please say hi"))
	e.waitExited(node)
	var a tools.AgentInfo
	testenv.Eventually(t, 60*time.Second, func() bool {
		a = e.whyOf(node)
		u := a.Usage
		return u != nil && u.Known && u.Life.InputTokens > 0 && u.Life.OutputTokens > 0
	}, func() string {
		_, snap, _ := e.run(e.ts, "snapshot", node)
		return "no usage from Gemini CLI's exporter: " + jsonOf(a.Usage) + "\n" + snap
	})
	if a.Usage.Life.CostUSD != nil {
		t.Fatalf("Gemini CLI sends no cost, yet one is counted: %v", *a.Usage.Life.CostUSD)
	}
	if out := e.must(e.ts, "usage", "--by", "kind"); !strings.Contains(out, "gemini") {
		t.Fatalf("termsprawl usage --by kind:\n%s", out)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
