package toolserver

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"

	"github.com/termsprawl/termsprawl/orchestrator/monitor"
	"github.com/termsprawl/termsprawl/tools"
)

// EventsPath is the event stream's path (CONTRACT §19): the same stream
// the web monitor's page reads (one hub in package monitor), for clients
// that hold a token — the dashboard (cli/dash through tools.Events).
//
//	GET /events?show=NODE   Authorization: Bearer <operator token>
//
// The guards are /call's (no Origin, Host exactly 127.0.0.1:PORT,
// loopback peers, a known bearer token) and one more: the token must be
// the operator's. The stream carries every node's row, the pending
// dialogs and the shown node's screen; an agent's token is refused
// (403, kind forbidden), since the dashboard acts for a human and answers
// dialogs as the operator.
const EventsPath = "/events"

// kickStream makes the event streams send the node rows now (a mutation
// ran, a dialog opened or ended) instead of at the next poll of the
// in-memory tables.
func (s *Server) kickStream() {
	if m := s.monitor.mon.Load(); m != nil {
		m.Kick()
	}
}

// events routes GET /events to the monitor's stream once the caller is
// known to be the operator; every other request goes to next.
func (s *Server) events(m *monitor.Monitor, hostPort func() string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != EventsPath {
			next.ServeHTTP(w, r)
			return
		}
		refuse := func(status int, kind tools.Kind, format string, a ...any) {
			w.Header().Set("Connection", "close")
			writeEnvelope(w, status, tools.ErrResult(tools.Errorf(kind, format, a...)))
		}
		if len(r.Header.Values("Origin")) > 0 {
			refuse(http.StatusForbidden, tools.KindForbidden, "requests with an Origin header are refused: the event stream does not serve browsers (the web monitor has its own URL: termsprawl monitor)")
			return
		}
		if want := hostPort(); r.Host != want {
			refuse(http.StatusForbidden, tools.KindForbidden, "Host %q is refused: the tool server only answers to %s", clipText(r.Host, 100), want)
			return
		}
		if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() {
				refuse(http.StatusForbidden, tools.KindForbidden, "requests from %s are refused: loopback only", host)
				return
			}
		}
		token, ok := tools.BearerToken(r.Header.Get("Authorization"))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="termsprawl"`)
			refuse(http.StatusUnauthorized, tools.KindUnauthorized, "missing or malformed Authorization header: send \"Authorization: Bearer <token>\" with the operator's token (<state>/sessions/operator.json)")
			return
		}
		id, ok := s.Authenticate(token)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="termsprawl", error="invalid_token"`)
			refuse(http.StatusUnauthorized, tools.KindUnauthorized, "unknown or revoked token: use the operator's session file (<state>/sessions/operator.json)")
			return
		}
		if id.Role != tools.RoleOperator {
			refuse(http.StatusForbidden, tools.KindForbidden, "the event stream is the operator's: node %q's token cannot watch and answer for a human; use <state>/sessions/operator.json (termsprawl dash does)", id.Node)
			return
		}
		tools.MarkAuthenticated(r)
		m.ServeStream(w, r)
	})
}

// writeEnvelope writes a refused stream request as the JSON envelope.
func writeEnvelope(w http.ResponseWriter, status int, res tools.Result) {
	body, _ := json.Marshal(res)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintf(w, "%s\n", body)
}
