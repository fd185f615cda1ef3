package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// mcpHarness pipes lines into a running bridge and reads its replies.
type mcpHarness struct {
	t      *testing.T
	in     *io.PipeWriter
	lines  chan []byte
	done   chan int
	stderr *syncBuffer
	cancel context.CancelFunc
}

func startMCP(t *testing.T, session string) *mcpHarness {
	t.Helper()
	return startBridge(t, StdioConfig{Session: session, Verbose: true})
}

func startBridge(t *testing.T, cfg StdioConfig) *mcpHarness {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	h := &mcpHarness{t: t, in: inW, lines: make(chan []byte, 64), done: make(chan int, 1), stderr: &syncBuffer{}, cancel: cancel}
	go func() {
		code := RunStdio(ctx, cfg, inR, outW, h.stderr)
		outW.Close()
		h.done <- code
	}()
	go func() {
		r := bufio.NewReader(outR)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				h.lines <- line
			}
			if err != nil {
				close(h.lines)
				return
			}
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			t.Error("bridge did not stop")
		}
	})
	return h
}

func (h *mcpHarness) send(line string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

func (h *mcpHarness) sendJSON(v any) {
	h.t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		h.t.Fatal(err)
	}
	h.send(string(data))
}

// recv returns the next message.
func (h *mcpHarness) recv() map[string]any {
	h.t.Helper()
	select {
	case line, ok := <-h.lines:
		if !ok {
			h.t.Fatalf("bridge closed stdout; stderr:\n%s", h.stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			h.t.Fatalf("reply is not one JSON object per line: %v: %q", err, line)
		}
		return m
	case <-time.After(15 * time.Second):
		h.t.Fatalf("no reply; stderr:\n%s", h.stderr.String())
	}
	return nil
}

func (h *mcpHarness) request(id int, method string, params any) map[string]any {
	h.t.Helper()
	msg := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	h.sendJSON(msg)
	reply := h.recv()
	if got, _ := reply["id"].(float64); int(got) != id {
		h.t.Fatalf("reply id %v, want %d: %v", reply["id"], id, reply)
	}
	return reply
}

func (h *mcpHarness) initialize(version string) map[string]any {
	h.t.Helper()
	reply := h.request(1, "initialize", map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "test", "version": "1"},
	})
	if reply["error"] != nil {
		h.t.Fatalf("initialize failed: %v", reply["error"])
	}
	h.sendJSON(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return reply["result"].(map[string]any)
}

func rpcErrorCode(t *testing.T, reply map[string]any) int {
	t.Helper()
	e, ok := reply["error"].(map[string]any)
	if !ok {
		t.Fatalf("not an error reply: %v", reply)
	}
	return int(e["code"].(float64))
}

func TestMCPInitialize(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18"} {
		t.Run(v, func(t *testing.T) {
			fs := newFakeState(t)
			h := startMCP(t, fs.Agent)
			res := h.initialize(v)
			if res["protocolVersion"] != v {
				t.Errorf("protocolVersion %v, want %s", res["protocolVersion"], v)
			}
			if info := res["serverInfo"].(map[string]any); info["name"] != "termsprawl" {
				t.Errorf("serverInfo %v", info)
			}
			want, _ := tools.Guide("overview")
			if res["instructions"] != want {
				t.Errorf("instructions are not the overview guide")
			}
			if _, ok := res["capabilities"].(map[string]any)["tools"]; !ok {
				t.Errorf("no tools capability: %v", res["capabilities"])
			}
			calls := fs.Backend.Calls()
			if len(calls) != 1 || calls[0].Op != "session_info" {
				t.Fatalf("initialize made calls %+v, want one session_info", calls)
			}
		})
	}
}

func TestMCPInitializeFailsWhenDown(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	fs.RemoveEndpoint(t)
	h := startMCP(t, fs.Agent)
	reply := h.request(1, "initialize", map[string]any{"protocolVersion": "2024-11-05", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	if reply["result"] != nil {
		t.Fatalf("initialize succeeded with termsprawl down: %v", reply)
	}
	rpcErrorCode(t, reply)
	msg := reply["error"].(map[string]any)["message"].(string)
	if !strings.Contains(msg, "not reachable") || !strings.Contains(msg, "Tool connection unavailable") {
		t.Errorf("message %q", msg)
	}
	// Once termsprawl is up, a new initialize succeeds.
	fs.WriteEndpoint(t)
	h.initialize("2024-11-05")
}

func TestMCPToolsListMatchesTable(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	h := startMCP(t, fs.Agent)
	h.initialize("2025-03-26")
	reply := h.request(2, "tools/list", map[string]any{})
	res := reply["result"].(map[string]any)
	if c, ok := res["nextCursor"]; ok && c != "" {
		t.Fatalf("tools/list is paginated: %v", c)
	}
	list := res["tools"].([]any)
	ops := tools.Operations()
	if len(list) != len(ops) {
		t.Fatalf("%d tools, table has %d operations", len(list), len(ops))
	}
	byName := map[string]map[string]any{}
	for _, it := range list {
		tool := it.(map[string]any)
		byName[tool["name"].(string)] = tool
	}
	for _, op := range ops {
		tool, ok := byName[op.Name]
		if !ok {
			t.Errorf("tool %s missing", op.Name)
			continue
		}
		if tool["description"] != op.Description {
			t.Errorf("%s: description %q", op.Name, tool["description"])
		}
		var want any
		if err := json.Unmarshal(op.InputSchemaJSON(), &want); err != nil {
			t.Fatal(err)
		}
		schema := tool["inputSchema"].(map[string]any)
		if !reflect.DeepEqual(schema, want) {
			t.Errorf("%s: schema differs from the table:\n got %v\nwant %v", op.Name, schema, want)
		}
		if schema["additionalProperties"] != false {
			t.Errorf("%s: schema not strict", op.Name)
		}
		ann, _ := tool["annotations"].(map[string]any)
		wantAnn := map[string]any{
			"readOnlyHint":    op.Annotations.ReadOnly,
			"destructiveHint": op.Annotations.Destructive,
			"idempotentHint":  op.Annotations.Idempotent,
			"openWorldHint":   op.Annotations.OpenWorld,
		}
		for k, v := range wantAnn {
			got, ok := ann[k]
			if !ok {
				t.Errorf("%s: annotation %s not set explicitly", op.Name, k)
			} else if got != v {
				t.Errorf("%s: %s = %v, want %v", op.Name, k, got, v)
			}
		}
	}
}

func TestMCPProtocolErrors(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	h := startMCP(t, fs.Agent)
	h.initialize("2024-11-05")

	// Malformed JSON: -32700 with a null id.
	h.send(`{"jsonrpc":"2.0","id":3,"method":`)
	reply := h.recv()
	if code := rpcErrorCode(t, reply); code != -32700 {
		t.Fatalf("malformed line: code %d, want -32700", code)
	}
	if reply["id"] != nil {
		t.Errorf("parse error id %v, want null", reply["id"])
	}

	// Unknown method: -32601.
	if code := rpcErrorCode(t, h.request(4, "no/such/method", nil)); code != -32601 {
		t.Fatalf("unknown method: code %d, want -32601", code)
	}

	// A line over 256 KiB is refused with its id; nothing is called.
	before := len(fs.Backend.Calls())
	big := fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"terminal_type","arguments":{"terminal":"n1","text":%q}}}`, strings.Repeat("a", MaxLine))
	h.send(big)
	reply = h.recv()
	rpcErrorCode(t, reply)
	if got, _ := reply["id"].(float64); got != 5 {
		t.Errorf("over-long reply id %v, want 5", reply["id"])
	}
	if msg := reply["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "256 KiB") {
		t.Errorf("message %q", msg)
	}
	if n := len(fs.Backend.Calls()); n != before {
		t.Fatalf("over-long line reached the backend")
	}

	// The bridge keeps serving.
	if r := h.request(6, "ping", nil); r["error"] != nil {
		t.Fatalf("ping after errors: %v", r)
	}
}

// toolCall calls a tool and returns the result object.
func (h *mcpHarness) toolCall(id int, name string, args any) map[string]any {
	h.t.Helper()
	reply := h.request(id, "tools/call", map[string]any{"name": name, "arguments": args})
	res, ok := reply["result"].(map[string]any)
	if !ok {
		h.t.Fatalf("tools/call %s: %v", name, reply)
	}
	return res
}

func textEnvelope(t *testing.T, res map[string]any, index int) map[string]any {
	t.Helper()
	content := res["content"].([]any)
	block := content[index].(map[string]any)
	if block["type"] != "text" {
		t.Fatalf("block %d is %v", index, block["type"])
	}
	return decodeEnvelope(t, block["text"].(string))
}

func TestMCPToolCall(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	h := startMCP(t, fs.Agent)
	h.initialize("2025-06-18")

	res := h.toolCall(2, "terminal_list", map[string]any{})
	if res["isError"] == true {
		t.Fatalf("isError on success: %v", res)
	}
	if content := res["content"].([]any); len(content) != 1 {
		t.Fatalf("want one text block: %v", content)
	}
	env := textEnvelope(t, res, 0)
	if env["ok"] != true || env["value"].(map[string]any)["op"] != "terminal_list" {
		t.Fatalf("envelope %v", env)
	}

	// Invalid args: usage, isError, nothing sent.
	before := len(fs.Backend.Calls())
	res = h.toolCall(3, "terminal_snapshot", map[string]any{"bogus": true})
	if res["isError"] != true || textEnvelope(t, res, 0)["kind"] != "usage" {
		t.Fatalf("invalid args: %v", res)
	}
	if len(fs.Backend.Calls()) != before {
		t.Fatal("invalid args reached the backend")
	}

	// The app says no: isError with the envelope.
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		return tools.ErrResult(tools.Errorf(tools.KindNotFound, "no such terminal"))
	})
	res = h.toolCall(4, "terminal_snapshot", map[string]any{"terminal": "n1"})
	if res["isError"] != true || textEnvelope(t, res, 0)["kind"] != "not_found" {
		t.Fatalf("not_found: %v", res)
	}

	// A base64 PNG image becomes an image block plus text.
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1, 2, 3}, 10)...)
	b64 := base64.StdEncoding.EncodeToString(png)
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		return tools.OKResult(map[string]any{"terminal": "n1", "lines": []string{"$"}, "image": b64})
	})
	res = h.toolCall(5, "terminal_snapshot", map[string]any{"terminal": "n1", "screenshot": true})
	content := res["content"].([]any)
	if len(content) != 2 {
		t.Fatalf("want image + text: %v", content)
	}
	img := content[0].(map[string]any)
	if img["type"] != "image" || img["mimeType"] != "image/png" || img["data"] != b64 {
		t.Fatalf("image block %v", img)
	}
	env = textEnvelope(t, res, 1)
	val := env["value"].(map[string]any)
	if val["terminal"] != "n1" || strings.Contains(val["image"].(string), b64) {
		t.Fatalf("text block %v", env)
	}
}

func TestMCPDialogAnswerOnlyDeny(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	h := startMCP(t, fs.Agent)
	h.initialize("2024-11-05")
	before := len(fs.Backend.Calls())
	for i, mode := range []string{"allow", "always"} {
		res := h.toolCall(10+i, "dialog_answer", map[string]any{"dialog": "d1", "mode": mode})
		if res["isError"] != true {
			t.Fatalf("%s: not an error: %v", mode, res)
		}
		env := textEnvelope(t, res, 0)
		if env["kind"] != "not_run" || !strings.Contains(env["error"].(string), "approve permissions in termsprawl, not over MCP") {
			t.Fatalf("%s: envelope %v", mode, env)
		}
	}
	if n := len(fs.Backend.Calls()); n != before {
		t.Fatalf("a refused dialog_answer reached the backend (%d calls)", n-before)
	}
	res := h.toolCall(20, "dialog_answer", map[string]any{"dialog": "d1", "mode": "deny"})
	if res["isError"] == true {
		t.Fatalf("deny refused: %v", res)
	}
	calls := fs.Backend.Calls()
	if len(calls) != before+1 || calls[len(calls)-1].Op != "dialog_answer" {
		t.Fatalf("deny was not forwarded: %+v", calls)
	}
}

func TestMCPLogsRestart(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	h := startMCP(t, fs.Agent)
	h.initialize("2024-11-05")
	fs.Endpoint.InstanceID = "fake-restarted"
	fs.WriteEndpoint(t)
	if !testenv.Until(10*time.Second, func() bool { return strings.Contains(h.stderr.String(), "fake-restarted") }) {
		t.Fatalf("restart not logged; stderr:\n%s", h.stderr.String())
	}
	if !strings.Contains(h.stderr.String(), "restarted") {
		t.Errorf("stderr:\n%s", h.stderr.String())
	}
}

func TestReadLineLimit(t *testing.T) {
	t.Parallel()
	const limit = 16
	in := strings.Repeat("a", limit) + "\n" + // at the limit
		strings.Repeat("b", limit) + "\r\n" + // at the limit, CRLF
		strings.Repeat("c", limit+1) + "\n" + // over
		strings.Repeat("d", 5*limit) + "\n" + // far over
		"tail" // no newline at EOF
	r := bufio.NewReaderSize(strings.NewReader(in), 16)
	type got struct {
		line    string
		tooLong bool
	}
	var lines []got
	for {
		l, tl, err := readLine(r, limit)
		if len(l) > 0 || tl {
			lines = append(lines, got{string(l), tl})
		}
		if err != nil {
			break
		}
	}
	want := []got{
		{strings.Repeat("a", limit), false},
		{strings.Repeat("b", limit), false},
		{strings.Repeat("c", limit), true},
		{strings.Repeat("d", limit), true},
		{"tail", false},
	}
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("got %+v\nwant %+v", lines, want)
	}
}

func TestIDFromPrefix(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":"bbbb`: "7",
		`{"params":{"id":1},"id":"abc","x`:                         `"abc"`,
		`{"jsonrpc":"2.0","method":"x","params":{"id":3,"t":"bbb`:  "",
		`[1,2`: "",
	} {
		if got := string(idFromPrefix([]byte(in))); got != want {
			t.Errorf("%s: got %q want %q", in, got, want)
		}
	}
}

func TestMCPLogsSessionFileChanges(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	h := startMCP(t, fs.Agent)
	h.initialize("2024-11-05")
	content, err := os.ReadFile(fs.Agent)
	if err != nil {
		t.Fatal(err)
	}
	// Remove the session file (the node was closed): the bridge says so.
	// The watch is armed in the background: put the file back and remove
	// it again, each time giving the bridge a moment to report, until it
	// does.
	logged := func() bool { return strings.Contains(h.stderr.String(), "session file unusable") }
	if !testenv.Until(10*time.Second, func() bool {
		if err := tools.WriteFileAtomic(fs.Agent, content); err != nil {
			t.Fatal(err)
		}
		testenv.Until(100*time.Millisecond, logged)
		os.Remove(fs.Agent)
		return testenv.Until(200*time.Millisecond, logged)
	}) {
		t.Fatalf("removal of the session file not logged; stderr:\n%s", h.stderr.String())
	}
}
