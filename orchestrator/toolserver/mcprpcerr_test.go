package toolserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// /mcp answers JSON-RPC whatever goes wrong with a session id, also when
// the session ends between the door's check and the engine's (a
// concurrent DELETE): mcp-go's own reply to that is plain text.
func TestMCPBadSessionIsJSONRPC(t *testing.T) {
	s, door, _, url := mcpServe(t)
	tok := apiToken(t, s.op())
	sid := mcpInit(t, url, tok, "2025-06-18")
	testHookMCPEngine = func(r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") == sid {
			door.sessions.forRequest(r).Terminate(sid)
		}
	}
	t.Cleanup(func() { testHookMCPEngine = nil })
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
