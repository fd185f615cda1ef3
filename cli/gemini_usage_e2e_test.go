package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/fakemodel"
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
	e := newE2E(t)
	dir := testenv.NPM(t, geminiPackage)
	bin := filepath.Join(dir, "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, "gemini")); err != nil {
		testenv.SkipOrFail(t, "npm installed %s without a gemini binary: %v", geminiPackage, err)
	}
	// As TestGeminiWired: the state directory beneath the test cache, not
	// /tmp (Gemini CLI skips a system-defaults file where others may write).
	cache := testenv.CacheDir(t)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	stateParent, err := os.MkdirTemp(cache, "gemini-usage-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(stateParent) })
	e.state = filepath.Join(stateParent, "state")
	e.oper = tools.OperatorSessionPath(e.state)
	for i, kv := range e.env {
		if strings.HasPrefix(kv, "TERMSPRAWL_HOME=") {
			e.env[i] = "TERMSPRAWL_HOME=" + e.state
		}
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			e.env[i] = "PATH=" + bin + string(os.PathListSeparator) + p
		}
	}
	hold := make(chan struct{})
	fake, err := fakemodel.StartGemini(geminiScript(hold))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(hold); _ = fake.Close() })
	home, work := t.TempDir(), t.TempDir()
	settings := filepath.Join(home, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.env = append(e.env, "HOME="+home)
	up, _ := e.up()
	defer e.down(up)

	node := strings.TrimSpace(e.must(e.ts, "agent", "gemini", "--name", "gu", "--cwd", work, "--env", "GEMINI_API_KEY=gemini-dummy-VALUE",
		"--env", "GOOGLE_GEMINI_BASE_URL="+fake.URL, "--env", "GEMINI_CLI_TRUST_WORKSPACE=true", "--", "gemini", "-p", "please say hi"))
	e.waitExited(node)
	var a tools.AgentInfo
	testenv.Eventually(t, 60*time.Second, func() bool {
		if err := json.Unmarshal([]byte(e.must(e.ts, "why", node, "--json")), &a); err != nil {
			t.Fatal(err)
		}
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
