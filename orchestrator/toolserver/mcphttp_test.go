package toolserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/mcpserve"
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// useTestMCP gives a server the real MCP engine (as cmd/termsprawl
// installs it) and a clock the test moves, and hands back each door
// built; servers with their own hooks run side by side.
func useTestMCP(t testing.TB) (*fakeClock, *hooks, chan *mcpDoor) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	doors := make(chan *mcpDoor, 4)
	h := &hooks{mcpDoor: func(d *mcpDoor) { doors <- d }, mcpNow: clk.now,
		mcpFactory: func(c MCPEngineConfig) MCPEngine {
			return mcpserve.NewHTTP(mcpserve.HTTPConfig{Version: "test", Call: c.Call,
				Sessions: func(r *http.Request) mcpserve.SessionIDs { return c.Sessions(r) },
				IdleTTL:  c.IdleTTL, Logger: c.Logger})
		}}
	return clk, h, doors
}

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// logBuffer is a log destination safe for concurrent writers.
type logBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// mcpServe runs Serve with the MCP engine and returns it, its door and
// the /mcp URL.
func mcpServe(t *testing.T, origins ...string) (*apiServe, *mcpDoor, *fakeClock, string) {
	t.Helper()
	clk, h, doors := useTestMCP(t)
	tmux, dir := apiNewState(t)
	ctx, cancel := context.WithCancel(context.Background())
	s := &apiServe{t: t, tmux: tmux, dir: dir, cancel: cancel, done: make(chan error, 1), hooks: h, log: &logBuffer{}}
	ready := make(chan ServeInfo, 1)
	go func() {
		s.done <- serve(ctx, orchestrator.Config{StateDir: dir, Socket: tmux.Socket, Version: "test",
			LaunchWatch: 100 * time.Millisecond, MCPAllowOrigins: origins,
			Logger: slog.New(slog.NewTextHandler(s.log, nil))}, func(i ServeInfo) { ready <- i }, h)
	}()
	select {
	case s.info = <-ready:
	case err := <-s.done:
		cancel()
		t.Fatalf("Serve returned before ready: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("Serve not ready within 30s")
	}
	t.Cleanup(s.stop)
	return s, <-doors, clk, strings.TrimSuffix(s.info.Endpoint.URL, "/call") + MCPPath
}

// mcpReply is one raw HTTP exchange with /mcp.
type mcpReply struct {
	status int
	header http.Header
	body   []byte
}

func (r mcpReply) rpc(t testing.TB) map[string]any {
	t.Helper()
	b := bytes.TrimSpace(r.body)
	if strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(line, "data:"); ok {
				b = []byte(strings.TrimSpace(d))
			}
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("HTTP %d: not one JSON-RPC message: %v: %s", r.status, err, r.body)
	}
	return m
}

// mcpDo sends one request to /mcp.
func mcpDo(t testing.TB, method, url, token, session, body string, mod func(*http.Request)) mcpReply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if mod != nil {
		mod(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return mcpReply{status: resp.StatusCode, header: resp.Header, body: data}
}

func initBody(version string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"go-test","version":"1"}}}`, version)
}

// mcpInit opens a session and returns its id.
func mcpInit(t testing.TB, url, token, version string) string {
	t.Helper()
	r := mcpDo(t, http.MethodPost, url, token, "", initBody(version), nil)
	if r.status != http.StatusOK {
		t.Fatalf("initialize: HTTP %d: %s", r.status, r.body)
	}
	sid := r.header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: no Mcp-Session-Id: %s", r.body)
	}
	mcpDo(t, http.MethodPost, url, token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	return sid
}

func TestMCPHTTPGuards(t *testing.T) {
	t.Parallel()
	s, _, _, url := mcpServe(t, "http://localhost:6274")
	tok := apiToken(t, s.op())
	for _, tc := range []struct {
		name   string
		token  string
		mod    func(*http.Request)
		method string
		body   string
		status int
		want   string
	}{
		{"no bearer", "", nil, http.MethodPost, initBody("2025-06-18"), 401, "bearer token"},
		{"unknown token", strings.Repeat("ab", 32), nil, http.MethodPost, initBody("2025-06-18"), 401, "bearer token"},
		{"malformed token", "x", nil, http.MethodPost, initBody("2025-06-18"), 401, "bearer token"},
		{"DELETE without bearer", "", nil, http.MethodDelete, "", 401, "bearer token"},
		{"foreign Origin", tok, func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }, http.MethodPost, initBody("2025-06-18"), 403, "Origin"},
		{"foreign Host", tok, func(r *http.Request) { r.Host = "localhost.evil:80" }, http.MethodPost, initBody("2025-06-18"), 403, "Host"},
		{"PUT", tok, nil, http.MethodPut, "{}", 405, "not allowed"},
		{"body over 1 MiB", tok, nil, http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", tools.MaxBodyBytes) + `"}}`, 413, "limit"},
		{"unknown session", tok, func(r *http.Request) { r.Header.Set("Mcp-Session-Id", "nope") }, http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, 404, "initialize again"},
		{"GET without session", tok, nil, http.MethodGet, "", 400, "Mcp-Session-Id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mcpDo(t, tc.method, url, tc.token, "", tc.body, tc.mod)
			if r.status != tc.status || !strings.Contains(string(r.body), tc.want) {
				t.Fatalf("HTTP %d %s, want %d with %q", r.status, r.body, tc.status, tc.want)
			}
			if tc.status == 401 && r.header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	// An allowed Origin passes, with CORS headers.
	r := mcpDo(t, http.MethodPost, url, tok, "", initBody("2025-06-18"), func(r *http.Request) { r.Header.Set("Origin", "http://localhost:6274") })
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "http://localhost:6274" {
		t.Fatalf("allowed origin: HTTP %d %v %s", r.status, r.header, r.body)
	}
	// /call still refuses every Origin.
	code, res, _ := apiRaw(t, s.info.Endpoint, tok, strings.NewReader(`{"operation":"session_info"}`), func(r *http.Request) { r.Header.Set("Origin", "http://localhost:6274") })
	if code != 403 || res.Kind != tools.KindForbidden {
		t.Fatalf("/call with an Origin: %d %v", code, res)
	}
}

// Identity is the bearer's: a node's token is that node over MCP, and a
// session opened by one token cannot be used or ended with another.
func TestMCPHTTPIdentityFromBearer(t *testing.T) {
	t.Parallel()
	s, _, _, url := mcpServe(t)
	opTok := apiToken(t, s.op())
	node := apiLaunch(t, s.op(), "bash", "--norc", "--noprofile")
	nodeTok := apiToken(t, s.session(node))
	for _, tc := range []struct{ tok, node string }{{opTok, tools.OperatorNode}, {nodeTok, node}} {
		sid := mcpInit(t, url, tc.tok, "2025-06-18")
		r := mcpDo(t, http.MethodPost, url, tc.tok, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"session_info","arguments":{}}}`,
			func(r *http.Request) { r.Header.Set("Mcp-Protocol-Version", "2025-06-18") })
		res := r.rpc(t)["result"].(map[string]any)
		sc := res["structuredContent"].(map[string]any)
		if sc["node"] != tc.node {
			t.Fatalf("session_info over MCP with %s's token says node %v", tc.node, sc["node"])
		}
	}
	sid := mcpInit(t, url, opTok, "2025-06-18")
	if r := mcpDo(t, http.MethodPost, url, nodeTok, sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, nil); r.status != 404 {
		t.Fatalf("another token used the operator's session: HTTP %d %s", r.status, r.body)
	}
	if r := mcpDo(t, http.MethodDelete, url, nodeTok, sid, "", nil); r.status != 404 {
		t.Fatalf("another token ended the operator's session: HTTP %d %s", r.status, r.body)
	}
	if r := mcpDo(t, http.MethodPost, url, opTok, sid, `{"jsonrpc":"2.0","id":4,"method":"ping"}`, nil); r.status != 200 {
		t.Fatalf("the owner lost the session: HTTP %d %s", r.status, r.body)
	}
}

// 16 sessions per token; the 17th is refused until one ends (DELETE) or
// expires after 10 minutes idle.
func TestMCPHTTPSessionLimitDeleteExpiry(t *testing.T) {
	t.Parallel()
	s, door, clk, url := mcpServe(t)
	tok := apiToken(t, s.op())
	var sids []string
	for range MaxMCPSessions {
		sids = append(sids, mcpInit(t, url, tok, "2025-06-18"))
	}
	r := mcpDo(t, http.MethodPost, url, tok, "", initBody("2025-06-18"), nil)
	if r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), "16 MCP sessions") {
		t.Fatalf("17th session: HTTP %d %s", r.status, r.body)
	}
	// Another token has its own 16.
	node := apiLaunch(t, s.op(), "bash", "--norc", "--noprofile")
	mcpInit(t, url, apiToken(t, s.session(node)), "2025-06-18")

	if r := mcpDo(t, http.MethodDelete, url, tok, sids[0], "", nil); r.status != 200 {
		t.Fatalf("DELETE: HTTP %d %s", r.status, r.body)
	}
	if r := mcpDo(t, http.MethodPost, url, tok, sids[0], `{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil); r.status != 404 {
		t.Fatalf("a deleted session still answers: HTTP %d %s", r.status, r.body)
	}
	sids[0] = mcpInit(t, url, tok, "2025-06-18")

	// Idle expiry: 9 minutes is not enough; a request resets the clock;
	// 10 minutes idle ends the session.
	clk.advance(9 * time.Minute)
	if n := door.sessions.sweep(); n != 0 {
		t.Fatalf("%d sessions expired after 9 minutes", n)
	}
	if r := mcpDo(t, http.MethodPost, url, tok, sids[1], `{"jsonrpc":"2.0","id":3,"method":"ping"}`, nil); r.status != 200 {
		t.Fatalf("ping: HTTP %d %s", r.status, r.body)
	}
	clk.advance(MCPIdleTimeout - 9*time.Minute)
	// All but the one pinged, and the other node's.
	if n := door.sessions.sweep(); n != MaxMCPSessions {
		t.Fatalf("%d sessions expired, want %d (all but the one pinged)", n, MaxMCPSessions)
	}
	if r := mcpDo(t, http.MethodPost, url, tok, sids[2], `{"jsonrpc":"2.0","id":4,"method":"ping"}`, nil); r.status != 404 || !strings.Contains(string(r.body), "expired") {
		t.Fatalf("an expired session answers: HTTP %d %s", r.status, r.body)
	}
	for _, want := range []string{"mcp session opened", "mcp session ended", "mcp session expired", "mcp session refused"} {
		if !strings.Contains(s.log.String(), want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if n := door.sessions.open(operatorIdentity.Incarnation); n != 1 {
		t.Fatalf("%d open sessions after expiry, want 1", n)
	}
	mcpInit(t, url, tok, "2025-06-18") // room again
}

// Requests with bad credentials cannot drain a real token's budget; the
// token's own flood is limited.
func TestMCPHTTPRateLimit(t *testing.T) {
	t.Parallel()
	s, _, _, url := mcpServe(t)
	tok := apiToken(t, s.op())
	bad := strings.Repeat("cd", 32)
	for range mcpRateBurst + 50 {
		if r := mcpDo(t, http.MethodPost, url, bad, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil); r.status != 401 {
			t.Fatalf("bad token: HTTP %d", r.status)
		}
	}
	sid := mcpInit(t, url, tok, "2025-06-18")
	limited := 0
	for range mcpRateBurst + 10 {
		r := mcpDo(t, http.MethodPost, url, tok, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil)
		if r.status == http.StatusTooManyRequests {
			if r.header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			limited++
		}
	}
	// The fake clock does not move: exactly the burst passes (one went to
	// initialize and one to notifications/initialized).
	if limited != 12 {
		t.Fatalf("%d requests limited, want 12", limited)
	}
}

// Protocol 2025-03-26 batches over HTTP: replies as one array.
func TestMCPHTTPBatch(t *testing.T) {
	s, _, _, url := mcpServe(t)
	tok := apiToken(t, s.op())
	sid := mcpInit(t, url, tok, "2025-03-26")
	r := mcpDo(t, http.MethodPost, url, tok, sid, `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"session_info","arguments":{}}},{"jsonrpc":"2.0","method":"notifications/initialized"},`+initBody("2025-03-26")+`]`, nil)
	var replies []map[string]any
	if err := json.Unmarshal(r.body, &replies); err != nil || r.status != 200 {
		t.Fatalf("batch: HTTP %d %v %s", r.status, err, r.body)
	}
	got := map[float64]bool{}
	for _, m := range replies {
		got[m["id"].(float64)] = m["result"] != nil
	}
	if len(replies) != 3 || !got[2] || !got[3] || got[1] {
		t.Fatalf("batch replies %s", r.body)
	}
	r = mcpDo(t, http.MethodPost, url, tok, sid, `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, func(r *http.Request) { r.Header.Set("Mcp-Protocol-Version", "2025-06-18") })
	if r.status != 400 || !strings.Contains(string(r.body), "2025-03-26") {
		t.Fatalf("batch under 2025-06-18: HTTP %d %s", r.status, r.body)
	}
}

// Each element of a batch counts for the rate limit (3,000 calls in one
// batch ran in 1.46 s against 50/s), and at most mcpBatchConcurrency
// elements run at once.
func TestMCPHTTPBatchCountsEachElement(t *testing.T) {
	s, _, _, url := mcpServe(t)
	tok := apiToken(t, s.op())
	sid := mcpInit(t, url, tok, "2025-03-26")
	var mu sync.Mutex
	cur, most := 0, 0
	s.hooks.batchElement = func() func() {
		mu.Lock()
		cur++
		most = max(most, cur)
		mu.Unlock()
		return func() {
			mu.Lock()
			cur--
			mu.Unlock()
		}
	}
	const n = mcpRateBurst + 100
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"session_info","arguments":{}}}`, i+10)
	}
	b.WriteString("]")
	r := mcpDo(t, http.MethodPost, url, tok, sid, b.String(), nil)
	var replies []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &replies); err != nil || r.status != 200 || len(replies) != n {
		t.Fatalf("batch: HTTP %d %v, %d replies", r.status, err, len(replies))
	}
	ran, limited := 0, 0
	for _, m := range replies {
		switch {
		case m.Result != nil:
			ran++
		case m.Error != nil && m.Error.Code == codeLimited && strings.Contains(m.Error.Message, "rate limit"):
			limited++
		default:
			t.Fatalf("reply %+v", m)
		}
	}
	// The fake clock does not move: the burst, less initialize,
	// notifications/initialized and the batch's POST.
	if ran != mcpRateBurst-3 || limited != n-ran {
		t.Fatalf("%d elements ran and %d were limited, want %d and %d", ran, limited, mcpRateBurst-3, n-mcpRateBurst+3)
	}
	if most > mcpBatchConcurrency || most == 0 {
		t.Fatalf("%d batch elements ran at once, over %d", most, mcpBatchConcurrency)
	}
}

// A batch's replies share the batches' memory budget (CONTRACT §31): past
// it an element is answered with the budget's error instead of its
// reply, the others keep theirs, and nothing stays held afterwards.
func TestMCPHTTPBatchMemoryBudget(t *testing.T) {
	s, _, _, url := mcpServe(t)
	tok := apiToken(t, s.op())
	sid := mcpInit(t, url, tok, "2025-03-26")
	old := batchMemory
	batchMemory = tools.NewMemoryBudget("batch replies", 4<<10)
	t.Cleanup(func() { batchMemory = old })
	const n = 12
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"session_info","arguments":{}}}`, i+10)
	}
	b.WriteString("]")
	r := mcpDo(t, http.MethodPost, url, tok, sid, b.String(), nil)
	var replies []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &replies); err != nil || r.status != 200 || len(replies) != n {
		t.Fatalf("batch: HTTP %d %v, %d replies", r.status, err, len(replies))
	}
	ran, refused := 0, 0
	for _, m := range replies {
		switch {
		case m.Result != nil:
			ran++
		case m.Error != nil && strings.Contains(m.Error.Message, "batch replies") && strings.Contains(m.Error.Message, "retry"):
			refused++
		default:
			t.Fatalf("reply %d: %+v", m.ID, m)
		}
	}
	if ran == 0 || refused == 0 {
		t.Fatalf("%d ran, %d refused: want some of each under a 4 KiB budget", ran, refused)
	}
	if batchMemory.InUse() != 0 {
		t.Fatalf("%d bytes held after the batch", batchMemory.InUse())
	}
}
