package mcpserve

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// SessionIDs mints, checks and ends Mcp-Session-Id values (mcp-go's
// SessionIdManager). The tool server's implementation binds each session
// to the token that opened it and enforces the per-token limit.
type SessionIDs interface {
	Generate() string
	Validate(sessionID string) (isTerminated bool, err error)
	Terminate(sessionID string) (isNotAllowed bool, err error)
}

// HTTPConfig configures the protocol engine behind /mcp.
type HTTPConfig struct {
	Version string
	// Call runs an operation for the identity the tool server put in ctx.
	Call CallFunc
	// Sessions returns the session table for a request (nil: for
	// housekeeping outside a request).
	Sessions func(r *http.Request) SessionIDs
	// IdleTTL lets mcp-go drop its own per-session state of sessions idle
	// that long (the tool server expires them in its table itself).
	IdleTTL time.Duration
	Logger  *slog.Logger
}

// HTTPEngine is the MCP protocol engine of /mcp: mcp-go's Streamable HTTP
// server with the tools of the operation table. It does no
// authentication and checks no Origin: the tool server's guards run in
// front of it (CONTRACT §15).
type HTTPEngine struct {
	srv *server.StreamableHTTPServer
}

// NewHTTP builds the engine.
func NewHTTP(cfg HTTPConfig) *HTTPEngine {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	mcpSrv := newMCPServer(cfg.Version, options{
		call: cfg.Call,
		log:  log,
		structured: func(ctx context.Context) bool {
			return structuredFor(server.RequestProtocolVersion(ctx))
		},
	})
	opts := []server.StreamableHTTPOption{
		server.WithSessionIdManagerResolver(resolver(cfg.Sessions)),
		server.WithStreamableHTTPLogger(log),
	}
	if cfg.IdleTTL > 0 {
		opts = append(opts, server.WithSessionIdleTTL(cfg.IdleTTL))
	}
	return &HTTPEngine{srv: server.NewStreamableHTTPServer(mcpSrv, opts...)}
}

// ServeHTTP serves one MCP request.
func (e *HTTPEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) { e.srv.ServeHTTP(w, r) }

// Close ends every open listening stream.
func (e *HTTPEngine) Close(ctx context.Context) { e.srv.CloseSessions(ctx) }

type resolver func(r *http.Request) SessionIDs

func (f resolver) ResolveSessionIdManager(r *http.Request) server.SessionIdManager { return f(r) }

// ProtocolHeader is the request header naming the protocol version
// (sent from 2025-06-18 on).
const ProtocolHeader = mcp.HeaderProtocolVersion

// BatchVersion is the one protocol version with JSON-RPC batches.
const BatchVersion = mcp.ProtocolVersion20250326
