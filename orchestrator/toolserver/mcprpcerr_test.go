package toolserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// /mcp answers JSON-RPC whatever goes wrong with a session id, also when
// the session ends between the door's check and the engine's (a
// concurrent DELETE): mcp-go's own reply to that is plain text.
func TestMCPBadSessionIsJSONRPC(t *testing.T) {
	s, door, _, url := mcpServe(t)
	tok := apiToken(t, s.op())
	sid := mcpInit(t, url, tok, "2025-06-18")
	s.hooks.mcpEngine = func(r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") == sid {
			door.sessions.forRequest(r).Terminate(sid)
		}
	}
	{
		body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"session_info","arguments":{}}}`
		r := mcpDo(t, http.MethodPost, url, tok, sid, body, nil)
		var m struct {
			JSONRPC string `json:"jsonrpc"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if r.status != http.StatusNotFound || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") ||
			json.Unmarshal(r.body, &m) != nil || m.JSONRPC != "2.0" || m.Error.Code != codeNoSession || !strings.Contains(m.Error.Message, "initialize again") {
			t.Fatalf("a session ended under the request: HTTP %d %s %q", r.status, r.header.Get("Content-Type"), r.body)
		}
	}
}

// /mcp and /call share a token's requests in flight: a node whose share
// is taken (long waits on /call) is refused on /mcp too, at once, and the
// operator is served on both.
func TestMCPSharesTheTokensSlots(t *testing.T) {
	t.Parallel()
	s, door, _, url := mcpServe(t)
	op := s.op()
	node := apiLaunch(t, op, "cat")
	tok := apiToken(t, s.session(node))
	id, ok := door.api.Authenticate(tok)
	if !ok {
		t.Fatal("the node's token is unknown")
	}
	var held []func()
	for range tools.MaxCallsPerToken {
		release, err := door.api.slots.Acquire(id)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	r := mcpDo(t, http.MethodPost, url, tok, "", initBody("2025-06-18"), nil)
	if r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), "in flight") {
		t.Fatalf("/mcp over the token's share: HTTP %d %s", r.status, r.body)
	}
	res := apiCall(t, s.session(node), "session_info", nil)
	if res.OK || res.Kind != tools.KindRejected || res.Details["quota"] != "calls" {
		t.Fatalf("/call over the token's share: %s", apiRes(res))
	}
	mcpInit(t, url, apiToken(t, op), "2025-06-18")
	apiOK(t, op, "terminal_list", nil, nil)
	for _, release := range held {
		release()
	}
	mcpInit(t, url, tok, "2025-06-18")
}
