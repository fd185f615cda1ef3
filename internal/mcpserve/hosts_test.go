package mcpserve

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// What real MCP hosts do to the bridge (issue 9), in-process against the
// real client and /call handler in front of a fake orchestrator.

// A wait the client cancels gets no reply at all, is not reported as an
// outage, and the next request is answered.
func TestMCPCancelledWaitGetsNoReply(t *testing.T) {
	fs := newFakeState(t)
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	fs.Backend.SetReply(func(ctx context.Context, op string, _ json.RawMessage) tools.Result {
		if op != "terminal_wait_for" {
			return tools.OKResult(map[string]any{"op": op})
		}
		started <- struct{}{}
		<-ctx.Done() // the bridge's HTTP request goes away
		ended <- ctx.Err()
		return tools.ErrResult(tools.Errorf(tools.KindTimeout, "cancelled"))
	})
	dropped := make(chan string, 1)
	h := startBridge(t, StdioConfig{Session: fs.Agent, dropped: func(id json.RawMessage) { dropped <- string(id) }})
	h.initialize("2025-06-18")
	h.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{
		"name": "terminal_wait_for", "arguments": map[string]any{"terminal": "n1", "wait": "text", "text": "never", "timeout_ms": 40000}}})
	<-started
	h.sendJSON(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": 7, "reason": "user pressed Esc"}})
	if err := <-ended; err == nil {
		t.Fatal("the orchestrator's request was not cancelled")
	}
	if id := <-dropped; id != "7" {
		t.Fatalf("dropped the reply of %s, want 7", id)
	}
	// The next request is answered, and it is the next message out: the
	// cancelled request's reply never came.
	if r := h.request(8, "ping", nil); r["error"] != nil {
		t.Fatalf("ping after cancel: %v", r)
	}
	if s := h.stderr.String(); strings.Contains(s, "unreachable") || strings.Contains(s, "unavailable") {
		t.Errorf("a cancelled wait was logged as an outage:\n%s", s)
	}
}

// 1.0 and 1e0 are integers (JSON Schema): validated, and handed on in
// plain form so that the orchestrator's decoder takes them.
func TestMCPIntegerForms(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	h := startBridge(t, StdioConfig{Session: fs.Agent})
	h.initialize("2025-06-18")
	res := h.toolCall(2, "terminal_resize", map[string]any{"terminal": "n1", "columns": json.Number("80.0"), "rows": json.Number("2.4e1")})
	if res["isError"] == true {
		t.Fatalf("1.0-style integers refused: %v", textEnvelope(t, res, 0))
	}
	res = h.toolCall(3, "terminal_wait_for", map[string]any{"terminal": "n1", "wait": "quiet", "quiet_ms": json.Number("1e2"), "timeout_ms": json.Number("1E3")})
	if res["isError"] == true {
		t.Fatalf("1e0-style integers refused: %v", textEnvelope(t, res, 0))
	}
	res = h.toolCall(4, "terminal_resize", map[string]any{"terminal": "n1", "columns": json.Number("80.5"), "rows": 24})
	if res["isError"] != true || !strings.Contains(textEnvelope(t, res, 0)["error"].(string), `"columns" must be an integer`) {
		t.Fatalf("80.5 accepted as an integer: %v", res)
	}
	var got []string
	for _, c := range fs.Backend.Calls() {
		if c.Op != "session_info" {
			got = append(got, string(c.Args))
		}
	}
	want := []string{`{"columns":80,"rows":24,"terminal":"n1"}`, `{"quiet_ms":100,"terminal":"n1","timeout_ms":1000,"wait":"quiet"}`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the orchestrator got %q, want %q", got, want)
	}
}

// gemini-cli's wait_for_previous is dropped; any other unknown argument
// stays a usage error that names it.
func TestMCPClientInjectedArgs(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	h := startBridge(t, StdioConfig{Session: fs.Agent})
	h.initialize("2025-06-18")
	res := h.toolCall(2, "terminal_list", map[string]any{"wait_for_previous": true})
	if res["isError"] == true {
		t.Fatalf("wait_for_previous refused: %v", textEnvelope(t, res, 0))
	}
	res = h.toolCall(3, "terminal_type", map[string]any{"terminal": "n1", "text": "ls", "wait_for_previous": false})
	if res["isError"] == true {
		t.Fatalf("wait_for_previous refused: %v", textEnvelope(t, res, 0))
	}
	calls := fs.Backend.Calls()
	for _, c := range calls {
		if strings.Contains(string(c.Args), "wait_for_previous") {
			t.Errorf("%s got the injected argument: %s", c.Op, c.Args)
		}
	}
	if last := calls[len(calls)-1]; string(last.Args) != `{"terminal":"n1","text":"ls"}` {
		t.Errorf("terminal_type args %s", last.Args)
	}
	before := len(calls)
	res = h.toolCall(4, "terminal_list", map[string]any{"wait_for_previous": true, "bogus": 1})
	env := textEnvelope(t, res, 0)
	if res["isError"] != true || env["kind"] != "usage" || !strings.Contains(env["error"].(string), `unknown argument "bogus"`) {
		t.Fatalf("bogus: %v", env)
	}
	if len(fs.Backend.Calls()) != before {
		t.Fatal("a refused call reached the orchestrator")
	}
}

// Hosts cut instructions at 2,048 characters.
func TestMCPInstructionsFit(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	h := startBridge(t, StdioConfig{Session: fs.Agent})
	res := h.initialize("2025-06-18")
	ins, _ := res["instructions"].(string)
	if ins == "" || len([]rune(ins)) > 2048 {
		t.Fatalf("instructions of %d characters", len([]rune(ins)))
	}
	if !strings.Contains(ins, "session_info") || !strings.Contains(ins, "guide_read") {
		t.Errorf("instructions do not say where to start:\n%s", ins)
	}
}

// At the default level stderr stays silent through a handshake, calls and
// a restart (hosts show every line as an error); --verbose tells.
func TestMCPStderrQuietByDefault(t *testing.T) {
	t.Parallel()
	for _, verbose := range []bool{false, true} {
		fs := newFakeState(t)
		h := startBridge(t, StdioConfig{Session: fs.Agent, Verbose: verbose})
		h.initialize("2025-06-18")
		h.toolCall(2, "terminal_list", map[string]any{})
		h.toolCall(3, "terminal_snapshot", map[string]any{"bogus": true})
		fs.Endpoint.InstanceID = "fake-restarted"
		fs.WriteEndpoint(t)
		h.toolCall(4, "terminal_list", map[string]any{})
		if !verbose {
			h.in.Close()
			<-h.done
			h.done <- 0 // for the cleanup
			if s := h.stderr.String(); s != "" {
				t.Errorf("stderr at the default level:\n%s", s)
			}
			continue
		}
		if s := h.stderr.String(); !strings.Contains(s, "connected to termsprawl") {
			t.Errorf("--verbose: no connection line:\n%s", s)
		}
	}
}

// A call with a progressToken that runs longer than ProgressInterval
// gets notifications/progress, all before its result.
func TestMCPProgressDuringWait(t *testing.T) {
	old := ProgressInterval
	ProgressInterval = 20 * time.Millisecond
	t.Cleanup(func() { ProgressInterval = old })
	fs := newFakeState(t)
	release := make(chan struct{})
	fs.Backend.SetReply(func(ctx context.Context, op string, _ json.RawMessage) tools.Result {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return tools.OKResult(tools.WaitResult{Matched: true})
	})
	h := startBridge(t, StdioConfig{Session: fs.Agent})
	h.initialize("2025-06-18")
	h.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": map[string]any{
		"_meta": map[string]any{"progressToken": "tok-5"},
		"name":  "terminal_wait_for", "arguments": map[string]any{"terminal": "n1", "wait": "text", "text": "PASS", "timeout_ms": 12000}}})
	last := 0.0
	for i := 0; i < 3; i++ {
		m := h.recv()
		if m["method"] != "notifications/progress" {
			t.Fatalf("message %d is not progress: %v", i, m)
		}
		p := m["params"].(map[string]any)
		if p["progressToken"] != "tok-5" || p["total"] != 12.0 {
			t.Fatalf("progress params %v", p)
		}
		if prog := p["progress"].(float64); prog <= last {
			t.Fatalf("progress %v after %v: not increasing", prog, last)
		} else {
			last = prog
		}
		if msg, _ := p["message"].(string); !strings.Contains(msg, `"PASS"`) || !strings.Contains(msg, "n1") {
			t.Errorf("progress message %q", msg)
		}
	}
	close(release)
	for {
		m := h.recv()
		if m["method"] == "notifications/progress" {
			continue
		}
		if m["id"] != 5.0 || m["result"] == nil {
			t.Fatalf("want the result of 5: %v", m)
		}
		break
	}
	// Without a token: no progress, just the result.
	res := h.request(6, "tools/call", map[string]any{"name": "terminal_list", "arguments": map[string]any{}})
	if res["result"] == nil {
		t.Fatalf("%v", res)
	}
}

// --wait applies to tool calls: a call made while termsprawl is down
// waits for it and is answered by the new instance.
func TestMCPWaitRidesOutage(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	h := startBridge(t, StdioConfig{Session: fs.Agent, Wait: 20 * time.Second})
	h.initialize("2025-06-18")
	fs.Stop(t)
	h.sendJSON(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "terminal_list", "arguments": map[string]any{}}})
	select {
	case l := <-h.lines:
		t.Fatalf("answered while termsprawl was down: %s", l)
	case <-time.After(300 * time.Millisecond):
	}
	fs.Listen(t) // a new instance on a new port
	reply := h.recv()
	res, _ := reply["result"].(map[string]any)
	if res == nil || res["isError"] == true {
		t.Fatalf("the call did not ride out the outage: %v", reply)
	}
	if env := textEnvelope(t, res, 0); env["ok"] != true {
		t.Fatalf("%v", env)
	}
}

// Protocol 2025-03-26 takes JSON-RPC batches; other versions refuse them
// with one clear error; initialize may not be batched.
func TestMCPBatches(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	h := startBridge(t, StdioConfig{Session: fs.Agent})
	h.initialize("2025-03-26")
	h.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},` +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"terminal_list","arguments":{}}},` +
		`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}]`)
	line := <-h.lines
	var replies []map[string]any
	if err := json.Unmarshal(line, &replies); err != nil {
		t.Fatalf("batch reply is not an array: %v: %s", err, line)
	}
	byID := map[float64]map[string]any{}
	for _, r := range replies {
		byID[r["id"].(float64)] = r
	}
	if len(replies) != 3 || byID[2]["result"] == nil || byID[3]["result"] == nil || byID[4]["error"] == nil {
		t.Fatalf("batch replies %s", line)
	}
	// Notifications only: no reply; the next line answers the ping.
	h.send(`[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`)
	if r := h.request(5, "ping", nil); r["error"] != nil {
		t.Fatal(r)
	}

	fs2 := newFakeState(t)
	h2 := startBridge(t, StdioConfig{Session: fs2.Agent})
	h2.initialize("2025-06-18")
	h2.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	r := h2.recv()
	if rpcErrorCode(t, r) != -32600 || !strings.Contains(r["error"].(map[string]any)["message"].(string), "2025-03-26") {
		t.Fatalf("batch under 2025-06-18: %v", r)
	}
}

// The stateless handshake (server/discover) checks that termsprawl is
// reachable, as initialize does.
func TestMCPDiscoverChecksReachable(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	fs.RemoveEndpoint(t)
	h := startBridge(t, StdioConfig{Session: fs.Agent})
	r := h.request(1, "server/discover", map[string]any{})
	if rpcErrorCode(t, r) != rpcUnreachable {
		t.Fatalf("server/discover with termsprawl down: %v", r)
	}
	fs.WriteEndpoint(t)
	r = h.request(2, "server/discover", map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "t", "version": "1"},
	}})
	if r["result"] == nil {
		t.Fatalf("server/discover: %v", r)
	}
	n := 0
	for _, c := range fs.Backend.Calls() {
		if c.Op == "session_info" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d session_info calls, want 1 (the reachable handshake)", n)
	}
}

// outputSchema on every tool from 2025-06-18 on (none before), and a
// successful value as structuredContent.
func TestMCPOutputSchemas(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"2024-11-05", "2025-06-18", "2025-11-25"} {
		fs := newFakeState(t)
		h := startBridge(t, StdioConfig{Session: fs.Agent})
		h.initialize(v)
		list := h.request(2, "tools/list", map[string]any{})["result"].(map[string]any)["tools"].([]any)
		for _, it := range list {
			tool := it.(map[string]any)
			op, _ := tools.Lookup(tool["name"].(string))
			got, has := tool["outputSchema"]
			if !structuredFor(v) {
				if has {
					t.Errorf("%s %s: outputSchema under %s", v, op.Name, v)
				}
				continue
			}
			var want any
			_ = json.Unmarshal(op.OutputSchemaJSON(), &want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: outputSchema differs from the table", op.Name)
			}
			if s, _ := got.(map[string]any); s["type"] != "object" {
				t.Errorf("%s: outputSchema is not an object schema: %v", op.Name, s["type"])
			}
		}
		res := h.toolCall(3, "terminal_list", map[string]any{})
		sc, has := res["structuredContent"]
		if structuredFor(v) != has {
			t.Errorf("%s: structuredContent present %v", v, has)
		}
		if has && !reflect.DeepEqual(sc, textEnvelope(t, res, 0)["value"]) {
			t.Errorf("%s: structuredContent %v is not the value", v, sc)
		}
	}
}
