package toolserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// MCP over Streamable HTTP at /mcp on the tool server's listener
// (CONTRACT §15). This file is the door: Origin, Host, peer, bearer
// token, rate limit, body cap, sessions per token and their expiry. The
// protocol itself is an MCPEngine built from the operation table with
// mcp-go (internal/mcpserve); the termsprawl binary installs it with
// UseMCP. It is plugged in rather than imported because termsprawlctl
// links this package (through cli's `up`), and mcp-go's server package
// costs every `termsprawlctl call` several milliseconds of start-up
// (docs/PERFORMANCE.md, "A lean termsprawlctl").

// MCPPath is where MCP is served.
const MCPPath = "/mcp"

// MCPEngine serves the MCP protocol behind the door.
type MCPEngine interface {
	http.Handler
	// Close ends the engine's open listening streams.
	Close(ctx context.Context)
}

// MCPSessionIDs is mcp-go's SessionIdManager: the door's session table,
// seen from one request.
type MCPSessionIDs interface {
	Generate() string
	Validate(sessionID string) (isTerminated bool, err error)
	Terminate(sessionID string) (isNotAllowed bool, err error)
}

// MCPEngineConfig is what the door gives the engine.
type MCPEngineConfig struct {
	// Call runs a validated operation as the identity of the request
	// (its bearer token), as POST /call does.
	Call func(ctx context.Context, op *tools.Operation, args json.RawMessage) tools.Result
	// Sessions is the session table for a request (r nil: housekeeping).
	Sessions func(r *http.Request) MCPSessionIDs
	IdleTTL  time.Duration
	Logger   *slog.Logger
}

// MCPEngineFactory builds the engine of one tool server.
type MCPEngineFactory func(MCPEngineConfig) MCPEngine

var (
	mcpMu      sync.Mutex // guards mcpFactory
	mcpFactory MCPEngineFactory
)

// UseMCP installs the MCP engine that Serve mounts at /mcp (nil: none,
// and /mcp answers 404 saying so). The termsprawl binary calls it once
// before it serves.
func UseMCP(f MCPEngineFactory) {
	mcpMu.Lock()
	mcpFactory = f
	mcpMu.Unlock()
}

func installedMCP() MCPEngineFactory {
	mcpMu.Lock()
	defer mcpMu.Unlock()
	return mcpFactory
}

// identityKey carries the caller's identity from the door to Call.
type identityKey struct{}

func identityFrom(ctx context.Context) (tools.Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(tools.Identity)
	return id, ok
}

// MCPOptions configure the door.
type MCPOptions struct {
	// AllowOrigins are the Origin values accepted (`termsprawl up
	// --mcp-allow-origin`); any other Origin is refused.
	AllowOrigins []string
	// Now is the clock of expiry and rate limits (nil: time.Now).
	Now func() time.Time
	// IdleTimeout is a session's idle expiry (0: MCPIdleTimeout).
	IdleTimeout time.Duration
}

// mcpDoor is the /mcp handler.
type mcpDoor struct {
	api      *Server
	engine   MCPEngine
	hostPort func() string
	origins  map[string]bool
	sessions *mcpSessions
	limiter  *rateLimiter
	log      *slog.Logger
}

// newMCPDoor builds /mcp for s, or returns nil when no engine is
// installed.
func (s *Server) newMCPDoor(hostPort func() string, opts MCPOptions) *mcpDoor {
	f := installedMCP()
	if s.hooks != nil && s.hooks.mcpFactory != nil {
		f = s.hooks.mcpFactory
	}
	if f == nil {
		return nil
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	ttl := cmpOr(opts.IdleTimeout, MCPIdleTimeout)
	log := s.log.With("component", "mcp")
	d := &mcpDoor{api: s, hostPort: hostPort, origins: map[string]bool{}, log: log,
		sessions: newMCPSessions(log, now, ttl), limiter: newRateLimiter(now, mcpRatePerSecond, mcpRateBurst)}
	for _, o := range opts.AllowOrigins {
		d.origins[strings.TrimRight(o, "/")] = true
	}
	d.engine = f(MCPEngineConfig{
		Call: func(ctx context.Context, op *tools.Operation, args json.RawMessage) tools.Result {
			id, ok := identityFrom(ctx)
			if !ok {
				return tools.ErrResult(tools.Errorf(tools.KindUnauthorized, "no identity for this MCP request"))
			}
			return s.Handle(ctx, id, op, args)
		},
		Sessions: func(r *http.Request) MCPSessionIDs { return d.sessions.forRequest(r) },
		IdleTTL:  ttl,
		Logger:   log,
	})
	return d
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// sweepEvery runs the idle expiry until ctx ends, then ends the engine's
// open event streams (goroutine owned by Serve, ends with its context).
func (d *mcpDoor) sweepEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			d.engine.Close(cctx)
			cancel()
			return
		case <-t.C:
			d.sessions.sweep()
			d.limiter.Prune()
			d.api.slots.Prune()
		}
	}
}

// rpcFail writes a JSON-RPC error reply with an HTTP status.
func rpcFail(w http.ResponseWriter, status, code int, format string, a ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": fmt.Sprintf(format, a...)}})
}

// JSON-RPC codes of the door's refusals (implementation-defined range).
const (
	codeRefused      = -32001 // Origin, Host, peer, credentials
	codeLimited      = -32002 // rate limit, session limit
	codeNoSession    = -32003 // unknown or expired session
	codeInvalidBatch = -32600
)

func (d *mcpDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	refuse := func(status int, format string, a ...any) {
		w.Header().Set("Connection", "close")
		rpcFail(w, status, codeRefused, format, a...)
	}
	if origin := r.Header.Get("Origin"); origin != "" || len(r.Header.Values("Origin")) > 0 {
		if !d.origins[strings.TrimRight(origin, "/")] {
			refuse(http.StatusForbidden, "Origin %q is refused: termsprawl's MCP endpoint serves local MCP hosts, not web pages (allow one with `termsprawl up --mcp-allow-origin ORIGIN`)", clipText(origin, 100))
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Vary", "Origin")
		w.Header().Set("Access-Control-Expose-Headers", "Mcp-Session-Id")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
			w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if want := d.hostPort(); r.Host != want {
		refuse(http.StatusForbidden, "Host %q is refused: this MCP endpoint only answers to %s", clipText(r.Host, 100), want)
		return
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() {
			refuse(http.StatusForbidden, "requests from %s are refused: loopback only", host)
			return
		}
	}
	switch r.Method {
	case http.MethodPost, http.MethodGet, http.MethodDelete:
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		refuse(http.StatusMethodNotAllowed, "method %s is not allowed on %s: POST messages, GET the event stream, DELETE the session", clipText(r.Method, 20), MCPPath)
		return
	}
	id, ok := d.authenticate(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="termsprawl"`)
		refuse(http.StatusUnauthorized, "missing, malformed or unknown bearer token: send \"Authorization: Bearer <token>\" with the token of a live node's session file on every request (`termsprawlctl mcp --print-http` prints it)")
		return
	}
	// The token's share of the connections (tools.CallSlots, shared with
	// /call): over it, refused before anything runs, and the connection
	// is not marked authenticated (its slot frees).
	release, lerr := d.api.slots.Acquire(id)
	if lerr != nil {
		w.Header().Set("Connection", "close")
		w.Header().Set("Retry-After", "1")
		rpcFail(w, http.StatusTooManyRequests, codeLimited, "%s", lerr.Error())
		return
	}
	defer release()
	tools.MarkAuthenticated(r)
	if ok, wait := d.limiter.Allow(id.Incarnation); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
		rpcFail(w, http.StatusTooManyRequests, codeLimited, "rate limit: at most %d MCP requests per second per token (bursts of %d); retry after %s", mcpRatePerSecond, mcpRateBurst, wait.Round(time.Millisecond))
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), identityKey{}, id))
	d.serve(w, r, id)
}

// authenticate maps the request's bearer token to its identity.
func (d *mcpDoor) authenticate(r *http.Request) (tools.Identity, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return tools.Identity{}, false
	}
	tok = strings.TrimSpace(tok)
	if !tools.ValidToken(tok) {
		return tools.Identity{}, false
	}
	return d.api.Authenticate(tok)
}

// serve handles an authenticated request: body, sessions, then the
// engine.
func (d *mcpDoor) serve(w http.ResponseWriter, r *http.Request, id tools.Identity) {
	var body []byte
	if r.Method == http.MethodPost {
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, tools.MaxBodyBytes))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				rpcFail(w, http.StatusRequestEntityTooLarge, codeLimited, "request body is over the %d-byte limit; send less per call", tools.MaxBodyBytes)
				return
			}
			rpcFail(w, http.StatusBadRequest, -32700, "read request body: %v", err)
			return
		}
		if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
			d.serveBatch(w, r, id, t)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if r.Method == http.MethodPost && jsonMethod(body) == "initialize" {
		if !d.sessions.admit(id.Incarnation) {
			d.log.Warn("mcp session refused: limit reached", "node", id.Node, "limit", MaxMCPSessions)
			rpcFail(w, http.StatusTooManyRequests, codeLimited, "node %s already has %d MCP sessions open, the most one token may have: end one (HTTP DELETE with its Mcp-Session-Id) or let it expire after %s idle", id.Node, MaxMCPSessions, d.sessions.ttl)
			return
		}
		defer d.sessions.release(id.Incarnation)
		d.serveEngine(w, r)
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		if r.Method != http.MethodPost {
			rpcFail(w, http.StatusBadRequest, codeNoSession, "%s %s needs the Mcp-Session-Id header of a session that initialize opened", r.Method, MCPPath)
			return
		}
		d.serveEngine(w, r) // the stateless protocol (2026-07-28) has no sessions
		return
	}
	if !d.sessions.begin(sid, id.Incarnation) {
		rpcFail(w, http.StatusNotFound, codeNoSession, "unknown or expired MCP session %q (sessions end with DELETE or after %s idle): send initialize again", clipText(sid, 40), d.sessions.ttl)
		return
	}
	defer d.sessions.end(sid)
	if r.Method == http.MethodGet {
		// The event stream outlives the server's write timeout.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	}
	d.serveEngine(w, r)
}

// jsonMethod is the "method" of a JSON-RPC object ("" if none).
func jsonMethod(body []byte) string {
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Method
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// withMCP routes /mcp to the MCP door (when an engine is installed) and
// everything else to next (POST /call's handler and its guards). The
// door's idle sweeper runs until the server's context ends.
func (s *Server) withMCP(next http.Handler, hostPort func() string, opts MCPOptions) http.Handler {
	if opts.Now == nil && s.hooks != nil {
		opts.Now = s.hooks.mcpNow
	}
	d := s.newMCPDoor(hostPort, opts)
	if d == nil {
		return next
	}
	if s.hooks.mcpDoor != nil {
		s.hooks.mcpDoor(d)
	}
	go d.sweepEvery(s.ctx, time.Minute)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == MCPPath {
			d.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
