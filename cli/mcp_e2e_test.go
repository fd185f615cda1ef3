package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/mcpserve"
	"github.com/termsprawl/termsprawl/internal/schematest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// mcpProc is `termsprawlctl mcp` (the real binary, which executes the
// termsprawl binary's bridge) with pipes.
type mcpProc struct {
	t      *testing.T
	in     io.WriteCloser
	lines  chan map[string]any
	stderr *syncBuffer
	p      *proc
}

func (e *e2e) mcp(args ...string) *mcpProc {
	e.t.Helper()
	cmd := exec.Command(e.ctl, append([]string{"mcp"}, args...)...)
	cmd.Env = e.env
	in, err := cmd.StdinPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	m := &mcpProc{t: e.t, in: in, lines: make(chan map[string]any, 64), stderr: &syncBuffer{}}
	cmd.Stderr = m.stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	m.p = &proc{cmd: cmd, exited: make(chan struct{})}
	e.active = append(e.active, m.p)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			var v map[string]any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				v = map[string]any{"unparsable": sc.Text()}
			}
			m.lines <- v
		}
		close(m.lines)
		m.p.err = cmd.Wait()
		close(m.p.exited)
	}()
	return m
}

func (m *mcpProc) send(v any) {
	m.t.Helper()
	data, _ := json.Marshal(v)
	if _, err := m.in.Write(append(data, '\n')); err != nil {
		m.t.Fatal(err)
	}
}

func (m *mcpProc) recv(within time.Duration) map[string]any {
	m.t.Helper()
	select {
	case v, ok := <-m.lines:
		if !ok {
			m.t.Fatalf("the bridge closed stdout; stderr:\n%s", m.stderr.String())
		}
		return v
	case <-time.After(within):
		m.t.Fatalf("no message within %s; stderr:\n%s", within, m.stderr.String())
	}
	return nil
}

// call sends a request and returns its reply, collecting the
// notifications that came before it.
func (m *mcpProc) call(id int, method string, params any) (map[string]any, []map[string]any) {
	m.t.Helper()
	m.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	var notes []map[string]any
	for {
		v := m.recv(60 * time.Second)
		if v["method"] != nil && v["id"] == nil {
			notes = append(notes, v)
			continue
		}
		if v["id"] != float64(id) {
			m.t.Fatalf("reply %v while waiting for %d", v, id)
		}
		return v, notes
	}
}

// tool calls a tool and returns its result (failing on a JSON-RPC error).
func (m *mcpProc) tool(id int, name string, args any) map[string]any {
	m.t.Helper()
	r, _ := m.call(id, "tools/call", map[string]any{"name": name, "arguments": args})
	res, ok := r["result"].(map[string]any)
	if !ok {
		m.t.Fatalf("tools/call %s: %v", name, r)
	}
	return res
}

// structured checks a successful result's structuredContent against the
// operation's output schema with a real validator, and returns it.
func (m *mcpProc) structured(op string, res map[string]any) map[string]any {
	m.t.Helper()
	if res["isError"] == true {
		m.t.Fatalf("%s: isError: %v", op, res["content"])
	}
	sc, ok := res["structuredContent"].(map[string]any)
	if !ok {
		m.t.Fatalf("%s: no structuredContent: %v", op, res)
	}
	raw, _ := json.Marshal(sc)
	if err := schematest.ValidateValue(op, raw); err != nil {
		m.t.Errorf("%s: %v", op, err)
	}
	return sc
}

func (m *mcpProc) initialize(version string) map[string]any {
	m.t.Helper()
	r, _ := m.call(1, "initialize", map[string]any{"protocolVersion": version, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "e2e", "version": "1"}})
	res, ok := r["result"].(map[string]any)
	if !ok {
		m.t.Fatalf("initialize: %v; stderr:\n%s", r, m.stderr.String())
	}
	m.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return res
}

// TestMCPThroughTheBinaries drives `termsprawlctl mcp` as the hosts do,
// against a real orchestrator: typed results, integer forms,
// wait_for_previous, a cancelled wait, progress during a 12 s wait, and a
// quiet stderr.
func TestMCPThroughTheBinaries(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	up, _ := e.up()
	defer e.down(up)
	m := e.mcp("--session", e.oper)
	res := m.initialize("2025-06-18")
	if n := len([]rune(res["instructions"].(string))); n > 2048 {
		t.Errorf("instructions of %d characters", n)
	}
	r, _ := m.call(2, "tools/list", map[string]any{})
	list := r["result"].(map[string]any)["tools"].([]any)
	if len(list) != len(tools.Operations()) {
		t.Fatalf("%d tools", len(list))
	}
	for _, it := range list {
		if it.(map[string]any)["outputSchema"] == nil {
			t.Errorf("%s has no outputSchema", it.(map[string]any)["name"])
		}
	}

	launch := m.structured("terminal_launch", m.tool(3, "terminal_launch", map[string]any{"command": []string{"bash", "--norc", "--noprofile"}, "name": "mcp", "wait_for_previous": true}))
	node := launch["result"].(map[string]any)["terminal"].(string)
	m.structured("terminal_submit", m.tool(4, "terminal_submit", map[string]any{"terminal": node, "text": "echo mcp-$((6*7))",
		"wait": map[string]any{"wait": "text", "text": "mcp-42", "timeout_ms": json.Number("2e4")}, "wait_for_previous": true}))
	m.structured("terminal_resize", m.tool(5, "terminal_resize", map[string]any{"terminal": node, "columns": json.Number("100.0"), "rows": json.Number("3e1")}))
	snap := m.structured("terminal_snapshot", m.tool(6, "terminal_snapshot", map[string]any{"terminal": node}))
	if snap["columns"] != 100.0 || snap["rows"] != 30.0 || !strings.Contains(fmt.Sprint(snap["lines"]), "mcp-42") {
		t.Errorf("snapshot %v×%v %v", snap["columns"], snap["rows"], snap["lines"])
	}
	m.structured("terminal_list", m.tool(7, "terminal_list", map[string]any{}))
	m.structured("session_info", m.tool(8, "session_info", map[string]any{"wait_for_previous": false}))
	bogus := m.tool(9, "terminal_list", map[string]any{"bogus": true})
	if bogus["isError"] != true || !strings.Contains(fmt.Sprint(bogus["content"]), `unknown argument \"bogus\"`) {
		t.Errorf("bogus: %v", bogus)
	}

	// A cancelled wait: no reply, and the next request is answered.
	m.send(map[string]any{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": map[string]any{"name": "terminal_wait_for",
		"arguments": map[string]any{"terminal": node, "wait": "text", "text": "never", "timeout_ms": 40000}}})
	m.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": 10}})
	if r, _ := m.call(11, "ping", map[string]any{}); r["error"] != nil {
		t.Fatalf("ping after cancel: %v", r)
	}

	// Progress during a 12 s wait.
	r, notes := m.call(12, "tools/call", map[string]any{"_meta": map[string]any{"progressToken": 12}, "name": "terminal_wait_for",
		"arguments": map[string]any{"terminal": node, "wait": "text", "text": "never", "timeout_ms": 12000}})
	if len(notes) < 2 {
		t.Errorf("%d progress notifications during a 12 s wait, want at least 2 (one per ≤5 s)", len(notes))
	}
	for _, n := range notes {
		if n["method"] != "notifications/progress" || n["params"].(map[string]any)["progressToken"] != 12.0 {
			t.Errorf("notification %v", n)
		}
	}
	if res := r["result"].(map[string]any); res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), `"kind":"timeout"`) {
		t.Errorf("12 s wait: %v", res)
	}
	m.structured("terminal_close", m.tool(13, "terminal_close", map[string]any{"terminal": node}))
	m.in.Close()
	if !m.p.waitExit(20 * time.Second) {
		t.Fatal("the bridge did not exit at EOF")
	}
	if s := m.stderr.String(); s != "" {
		t.Errorf("stderr at the default level:\n%s", s)
	}
}

// --wait applies to tool calls: a call made while termsprawl is down is
// answered once it is back.
func TestMCPWaitRidesOutageThroughTheBinaries(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	up, _ := e.up()
	m := e.mcp("--session", e.oper, "--wait", "40s", "--retry", "3")
	m.initialize("2025-06-18")
	e.must(e.ts, "down")
	if !up.waitExit(15 * time.Second) {
		t.Fatal("termsprawl up still runs after down")
	}
	m.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "terminal_list", "arguments": map[string]any{}}})
	up2, _ := e.up()
	defer e.down(up2)
	r := m.recv(60 * time.Second)
	res, _ := r["result"].(map[string]any)
	if res == nil || res["isError"] == true {
		t.Fatalf("the call did not ride out the restart: %v", r)
	}
	m.structured("terminal_list", res)
}

// Without the termsprawl binary next to it or on PATH, termsprawlctl mcp
// says how to install it.
func TestMCPNeedsTheTermsprawlBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := findHumanBinary()
	if err == nil {
		t.Skip("a termsprawl binary sits next to the test binary")
	}
	if !strings.Contains(err.Error(), "go install github.com/termsprawl/termsprawl/cmd/...@latest") || !strings.Contains(err.Error(), "termsprawl binary") {
		t.Fatalf("error %q does not say how to install it", err)
	}
}

func TestBridgeArgv(t *testing.T) {
	t.Parallel()
	got := strings.Join(bridgeArgv("/b/termsprawl", "/s/x.json", 20*time.Second, 3, true), " ")
	if want := "/b/termsprawl mcp-bridge --session /s/x.json --wait 20s --retry 3 --verbose"; got != want {
		t.Fatalf("argv %q, want %q", got, want)
	}
	if got := strings.Join(bridgeArgv("/b/termsprawl", "/s/x.json", 0, 0, false), " "); got != "/b/termsprawl mcp-bridge --session /s/x.json" {
		t.Fatalf("argv %q", got)
	}
}

// The constant cli cannot import without linking mcp-go.
func TestBridgeCommandName(t *testing.T) {
	t.Parallel()
	if bridgeCommand != mcpserve.BridgeCommand {
		t.Fatalf("cli runs %q, the termsprawl binary serves %q", bridgeCommand, mcpserve.BridgeCommand)
	}
}

// --print-http prints what an HTTP host needs, and the real termsprawl
// binary serves MCP there.
func TestMCPPrintHTTPThroughTheBinaries(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	up, _ := e.up()
	defer func() {
		if up != nil {
			e.down(up)
		}
	}()
	out := e.must(e.ctl, "--session", e.oper, "mcp", "--print-http", "--json")
	var setup httpSetup
	if err := json.Unmarshal([]byte(out), &setup); err != nil {
		t.Fatalf("--print-http --json: %v\n%s", err, out)
	}
	s, _ := tools.ReadSession(e.oper)
	if !strings.HasSuffix(setup.URL, "/mcp") || setup.Headers["Authorization"] != "Bearer "+s.Token {
		t.Fatalf("setup %+v", setup)
	}
	text := e.must(e.ctl, "--session", e.oper, "mcp", "--print-http")
	if !strings.Contains(text, "url:    "+setup.URL) || !strings.Contains(text, "header: Authorization: Bearer "+s.Token) {
		t.Fatalf("--print-http:\n%s", text)
	}
	req, _ := http.NewRequest(http.MethodPost, setup.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", setup.Headers["Authorization"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") == "" || !strings.Contains(string(body), `"name":"termsprawl"`) {
		t.Fatalf("initialize over HTTP: %d %s", resp.StatusCode, body)
	}
	// Not running: exit 3, and it says so.
	e.down(up)
	up = nil
	code, _, errb := e.run(e.ctl, "--session", e.oper, "mcp", "--print-http")
	if code != ExitNotRunning || !strings.Contains(errb, "termsprawl up") {
		t.Fatalf("--print-http while down: exit %d %q", code, errb)
	}
}

// inspector is the MCP Inspector, whose --cli mode is a headless MCP host.
const inspector = "@modelcontextprotocol/inspector@0.15.0"

// The MCP Inspector's CLI mode drives `termsprawlctl mcp` as a host does:
// it lists the tools and calls one.
func TestMCPInspectorCLI(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	node := testenv.LookPath(t, "node", "apt-get install nodejs")
	dir := testenv.NPM(t, inspector)
	up, _ := e.up()
	defer e.down(up)
	bin := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "cli", "build", "cli.js")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(node, append([]string{bin, "--cli", e.ctl, "mcp", "--session", e.oper}, args...)...)
		cmd.Env = e.env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("inspector %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	var list struct {
		Tools []struct {
			Name         string         `json:"name"`
			OutputSchema map[string]any `json:"outputSchema"`
		} `json:"tools"`
	}
	out := run("--method", "tools/list")
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &list); err != nil {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	if len(list.Tools) != len(tools.Operations()) {
		t.Fatalf("the Inspector lists %d tools, the table has %d", len(list.Tools), len(tools.Operations()))
	}
	out = run("--method", "tools/call", "--tool-name", "session_info")
	if !strings.Contains(out, `\"node\":\"operator\"`) {
		t.Fatalf("session_info through the Inspector:\n%s", out)
	}
}
