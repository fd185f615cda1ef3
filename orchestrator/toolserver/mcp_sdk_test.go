package toolserver

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/schematest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// mcpSDK is the official TypeScript SDK the HTTP test drives /mcp with.
const mcpSDK = "@modelcontextprotocol/sdk@1.32.2"

// sdkStep is one line the node script prints.
type sdkStep struct {
	Step             string            `json:"step"`
	Waiting          bool              `json:"waiting"`
	Failed           bool              `json:"failed"`
	Status           *int              `json:"status"`
	Message          string            `json:"message"`
	Count            int               `json:"count"`
	WithOutputSchema int               `json:"withOutputSchema"`
	Names            []string          `json:"names"`
	Instructions     int               `json:"instructions"`
	Node             string            `json:"node"`
	IsError          bool              `json:"isError"`
	Structured       json.RawMessage   `json:"structured"`
	Result           tools.Result      `json:"result"`
	Progress         []json.RawMessage `json:"progress"`
	Sessions         []string          `json:"sessions"`
}

// TestMCPHTTPWithTypeScriptSDK runs the real orchestrator with /mcp and
// drives it with @modelcontextprotocol/sdk's StreamableHTTPClientTransport
// in node: initialize, list, launch → submit → snapshot → close, identity
// from the bearer, progress during a 12 s wait, 401 without a token, a
// foreign Origin refused, the 17th session refused, DELETE, idle expiry
// (the server's clock is moved, no waiting).
func TestMCPHTTPWithTypeScriptSDK(t *testing.T) {
	testenv.SkipShort(t, "needs node, npm and a 12 s wait")
	t.Parallel()
	node := testenv.LookPath(t, "node", "apt-get install nodejs")
	modules := testenv.NPM(t, mcpSDK)
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "mcp_sdk_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(modules, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}

	s, door, clk, url := mcpServe(t)
	cmd := exec.Command(node, filepath.Join(dir, "client.mjs"))
	cmd.Env = append(os.Environ(), "MCP_URL="+url, "OP_TOKEN="+apiToken(t, s.op()))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	steps := map[string]sdkStep{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	timer := time.AfterFunc(3*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	for sc.Scan() {
		var st sdkStep
		if err := json.Unmarshal(sc.Bytes(), &st); err != nil {
			t.Fatalf("node printed %q: %v", sc.Text(), err)
		}
		t.Logf("sdk: %.300s", sc.Text())
		steps[st.Step] = st
		switch {
		case st.Step == "error":
			t.Fatalf("the SDK client failed: %s\nstderr:\n%s", st.Message, stderr.String())
		case st.Step == "node_token" && st.Waiting:
			answer(t, stdin, apiToken(t, s.session(st.Node)))
		case st.Step == "expire" && st.Waiting:
			// The closed clients' event streams end on the server when it
			// sees their connections close.
			if !testenv.Until(20*time.Second, func() bool { return door.sessions.allIdle(st.Sessions) }) {
				t.Fatal("the closed clients' streams did not end")
			}
			clk.advance(MCPIdleTimeout)
			if n := door.sessions.sweep(); n != len(st.Sessions) {
				t.Errorf("%d sessions expired after 10 minutes idle, want the %d closed ones", n, len(st.Sessions))
			}
			answer(t, stdin, "go")
		}
		if st.Step == "done" {
			break
		}
	}
	if _, ok := steps["done"]; !ok {
		t.Fatalf("the SDK client stopped early (steps %v)\nstderr:\n%s", keys(steps), stderr.String())
	}

	failedWith := func(step string, status int) {
		t.Helper()
		st := steps[step]
		if !st.Failed || st.Status == nil || *st.Status != status {
			t.Errorf("%s: want a failure with HTTP %d, got %+v", step, status, st)
		}
	}
	failedWith("no_bearer", 401)
	failedWith("origin", 403)
	failedWith("seventeenth", 429)
	for _, step := range []string{"delete", "expired"} {
		if st := steps[step]; st.Status == nil || *st.Status != 404 {
			t.Errorf("%s: the session answered HTTP %v, want 404", step, st.Status)
		}
	}
	if st := steps["alive"]; st.Count != len(tools.Operations()) {
		t.Errorf("a listening client lost its session to the expiry: %+v", st)
	}
	if n := steps["initialize"].Instructions; n == 0 || n > 2048 {
		t.Errorf("instructions of %d characters", n)
	}
	if st := steps["list"]; st.Count != len(tools.Operations()) || st.WithOutputSchema != st.Count {
		t.Errorf("tools/list: %d tools, %d with outputSchema; the table has %d", st.Count, st.WithOutputSchema, len(tools.Operations()))
	}
	for step, op := range map[string]string{"launch": "terminal_launch", "submit": "terminal_submit", "snapshot": "terminal_snapshot", "identity": "session_info", "close": "terminal_close"} {
		st := steps[step]
		if st.IsError || len(st.Structured) == 0 {
			t.Errorf("%s: isError %v, structuredContent %s", step, st.IsError, st.Structured)
			continue
		}
		if err := schematest.ValidateValue(op, st.Structured); err != nil {
			t.Errorf("%s: %v", step, err)
		}
	}
	var snap tools.Snapshot
	_ = json.Unmarshal(steps["snapshot"].Structured, &snap)
	if !strings.Contains(strings.Join(snap.Lines, "\n"), "sdk-42") {
		t.Errorf("snapshot after submit lacks the output: %q", snap.Lines)
	}
	var who tools.SessionInfo
	_ = json.Unmarshal(steps["identity"].Structured, &who)
	if who.Node != steps["launch"].Node || who.Node == "" {
		t.Errorf("session_info with the node's token says %q, want %q", who.Node, steps["launch"].Node)
	}
	if st := steps["progress"]; st.Count < 2 || st.Result.Kind != tools.KindTimeout {
		t.Errorf("12 s wait: %d progress notifications (want ≥2, one per ≤5 s), result %+v", st.Count, st.Result)
	}
}

func answer(t *testing.T, w io.Writer, line string) {
	t.Helper()
	if _, err := io.WriteString(w, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func keys(m map[string]sdkStep) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
