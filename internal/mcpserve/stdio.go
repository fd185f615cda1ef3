package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/termsprawl/termsprawl/tools"
)

// MaxLine is the longest JSON-RPC line the bridge accepts (CONTRACT §9),
// not counting the line end.
const MaxLine = 256 << 10

// JSON-RPC error codes the bridge answers itself.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	// rpcUnreachable is the implementation-defined server error of a failed
	// handshake: termsprawl could not be reached.
	rpcUnreachable = -32000
)

// Exit codes of the bridge (the CLIs' codes, CONTRACT §5, §10).
const (
	exitOK         = 0
	exitNo         = 1
	exitUsage      = 2
	exitNotRunning = 3
)

// StdioConfig configures the bridge.
type StdioConfig struct {
	// Session is the absolute path of the session file.
	Session string
	// dropped, set by the package's tests only, hears of every reply
	// dropped for a cancelled request.
	dropped func(id json.RawMessage)
	// Wait and Retry are termsprawlctl's --wait and --retry: they apply
	// to the initialize check and to every tool call, as for `call`.
	Wait  time.Duration
	Retry int
	// CallTimeout caps one call (0: the client's default).
	CallTimeout time.Duration
	// Verbose logs at info level; by default only warnings and errors
	// reach stderr (hosts show every stderr line as an error).
	Verbose bool
	// Version is the server version initialize reports.
	Version string
}

// bridge is the MCP stdio server: mcp-go's MCPServer behind our own line
// transport, which enforces the line limit, answers parse errors, drops
// the replies of cancelled requests and takes 2025-03-26 batches.
type bridge struct {
	cfg  StdioConfig
	srv  *server.MCPServer
	log  *slog.Logger
	out  io.Writer
	wmu  sync.Mutex // one JSON-RPC message per Write
	sess *bridgeSession

	// imu guards inflight: the requests being handled, by their raw id,
	// and whether the client cancelled each.
	imu      sync.Mutex
	inflight map[string]*inflightReq

	// connected: a handshake reached termsprawl; refusedDown: one was
	// refused because termsprawl is not running (then, if none ever
	// connected, the bridge exits 3 like every other command).
	connected, refusedDown atomic.Bool
}

type inflightReq struct{ cancelled bool }

// RunStdio serves MCP on stdin/stdout until stdin ends or ctx is done and
// returns the exit code: 0, 1 on a transport failure, 3 when every
// handshake was refused because termsprawl is not running.
func RunStdio(ctx context.Context, cfg StdioConfig, stdin io.Reader, stdout, stderr io.Writer) int {
	level := slog.LevelWarn
	if cfg.Verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("component", "termsprawlctl mcp")
	b := newBridge(cfg, stdout, log)
	if err := b.serve(ctx, stdin); err != nil {
		log.Error("stopped", "err", err)
		return exitNo
	}
	if b.refusedDown.Load() && !b.connected.Load() {
		return exitNotRunning
	}
	return exitOK
}

func newBridge(cfg StdioConfig, out io.Writer, log *slog.Logger) *bridge {
	b := &bridge{cfg: cfg, log: log, out: out, inflight: map[string]*inflightReq{}}
	b.sess = &bridgeSession{notes: make(chan mcp.JSONRPCNotification, 100)}
	b.srv = newMCPServer(cfg.Version, options{
		call: func(ctx context.Context, op *tools.Operation, args json.RawMessage) tools.Result {
			return tools.Call(ctx, cfg.Session, tools.Request{Operation: op.Name, Args: args},
				tools.CallOptions{Wait: cfg.Wait, Retry: cfg.Retry, Timeout: cfg.CallTimeout})
		},
		log: log,
		progress: func(ctx context.Context, params map[string]any) {
			b.write(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
				Method: string(mcp.MethodNotificationProgress), Params: mcp.NotificationParams{AdditionalFields: params}}})
		},
		// The request's version (stateless protocol) or the session's.
		structured: func(ctx context.Context) bool { return structuredFor(server.RequestProtocolVersion(ctx)) },
	})
	return b
}

// bridgeSession is the one client session of the stdio transport.
type bridgeSession struct {
	notes       chan mcp.JSONRPCNotification
	initialized atomic.Bool
	version     atomic.Value // string: the negotiated protocol version
}

func (s *bridgeSession) SessionID() string                                   { return "stdio" }
func (s *bridgeSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notes }
func (s *bridgeSession) Initialize()                                         { s.initialized.Store(true) }
func (s *bridgeSession) Initialized() bool                                   { return s.initialized.Load() }
func (s *bridgeSession) SetProtocolVersion(v string)                         { s.version.Store(v) }
func (s *bridgeSession) ProtocolVersion() string {
	v, _ := s.version.Load().(string)
	return v
}

// rpcError is a JSON-RPC error response written by the bridge itself.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcErrorBody    `json:"error"`
}

type rpcErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func errorReply(id json.RawMessage, code int, msg string, data any) rpcError {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return rpcError{JSONRPC: "2.0", ID: id, Error: rpcErrorBody{Code: code, Message: msg, Data: data}}
}

// write sends one message as one line.
func (b *bridge) write(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		b.log.Error("encode reply", "err", err)
		return
	}
	b.wmu.Lock()
	defer b.wmu.Unlock()
	if _, err := b.out.Write(append(data, '\n')); err != nil {
		b.log.Error("write reply", "err", err)
	}
}

func (b *bridge) writeError(id json.RawMessage, code int, msg string, data any) {
	b.write(errorReply(id, code, msg, data))
}

// inLine is one line read from stdin.
type inLine struct {
	data    []byte
	tooLong bool
	err     error
}

// serve runs the transport: read lines, answer over-long and malformed
// ones, hand the rest to mcp-go (requests concurrently, notifications in
// order), until stdin ends (then in-flight requests finish) or ctx ends
// (then they are cancelled).
//
// Goroutines: the notification writer and the file watchers end with
// reqCtx (when serve returns); the stdin reader ends at EOF or with
// reqCtx; one goroutine per request ends when its handler returns, and
// serve waits for them.
func (b *bridge) serve(ctx context.Context, stdin io.Reader) error {
	if err := b.srv.RegisterSession(ctx, b.sess); err != nil {
		return fmt.Errorf("register session: %w", err)
	}
	defer b.srv.UnregisterSession(context.Background(), b.sess.SessionID())

	reqCtx, cancelReqs := context.WithCancel(b.srv.WithContext(ctx, b.sess))
	defer cancelReqs()

	go func() {
		for {
			select {
			case n := <-b.sess.notes:
				b.write(n)
			case <-reqCtx.Done():
				return
			}
		}
	}()
	go b.watch(reqCtx)

	lines := make(chan inLine)
	go func() {
		r := bufio.NewReaderSize(stdin, 64<<10)
		for {
			data, tooLong, err := readLine(r, MaxLine)
			if len(data) > 0 || tooLong || err != nil {
				select {
				case lines <- inLine{data: data, tooLong: tooLong, err: err}:
				case <-reqCtx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()

	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			cancelReqs()
			return nil
		case l := <-lines:
			if len(l.data) > 0 || l.tooLong {
				b.handleLine(reqCtx, l.data, l.tooLong, &wg)
			}
			if l.err != nil {
				if !errors.Is(l.err, io.EOF) {
					b.log.Error("read stdin", "err", l.err)
				}
				// Let in-flight requests answer, then stop.
				wg.Wait()
				return nil
			}
		}
	}
}

// readLine reads one line without its line end. A line longer than limit
// is consumed to its end; only its first limit bytes are returned, with
// tooLong set.
func readLine(r *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > limit+2 { // room for "\r\n"
			if room := limit - len(line); room > 0 {
				line = append(line, chunk[:min(room, len(chunk))]...)
			}
			tooLong = true
		} else if !tooLong {
			line = append(line, chunk...)
		}
		switch {
		case err == nil:
			line = bytes.TrimRight(line, "\r\n")
			if len(line) > limit {
				line, tooLong = line[:limit], true
			}
			return line, tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			line = bytes.TrimRight(line, "\r\n")
			if len(line) > limit {
				line, tooLong = line[:limit], true
			}
			return line, tooLong, err
		}
	}
}

// idFromPrefix finds the top-level "id" of a (truncated) JSON object, so
// an over-long request can still be answered with its id.
func idFromPrefix(prefix []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil
		}
		if key == "id" {
			v := bytes.TrimSpace(val)
			if len(v) > 0 && (v[0] == '"' || v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
				return v
			}
			return nil
		}
	}
	return nil
}

// watch logs termsprawl restarts: it waits (fsnotify on the state
// directory, through tools.WaitForEndpoint) for an endpoint.json with a new
// instance_id. Calls re-read the files anyway; this is for the humans
// reading stderr (with --verbose).
func (b *bridge) watch(ctx context.Context) {
	go b.watchSession(ctx)
	epPath := tools.EndpointPathFor(b.cfg.Session)
	cur := ""
	if ep, err := tools.ReadEndpoint(epPath); err == nil {
		cur = ep.InstanceID
	}
	for ctx.Err() == nil {
		prev := cur
		ep, err := tools.WaitForEndpoint(ctx, epPath, func(ep tools.Endpoint) bool { return ep.InstanceID != prev })
		if err != nil {
			if ctx.Err() == nil {
				b.log.Warn("cannot watch endpoint.json; restarts will not be logged", "err", err)
			}
			return
		}
		cur = ep.InstanceID
		if prev == "" {
			b.log.Info("termsprawl is up", "instance", ep.InstanceID, "pid", ep.PID, "url", ep.URL)
		} else {
			b.log.Info("termsprawl restarted", "instance", ep.InstanceID, "previous", prev, "pid", ep.PID, "url", ep.URL)
		}
	}
}

// watchSession logs changes to the bridge's session file (a node closed
// removes it; a rewritten one carries a new token). Calls re-read it
// anyway.
func (b *bridge) watchSession(ctx context.Context) {
	err := tools.WatchFiles(ctx, []string{b.cfg.Session}, func(path string) {
		if s, err := tools.ReadSession(path); err != nil {
			b.log.Warn("session file unusable: calls will fail until it is back", "path", path, "err", err)
		} else {
			b.log.Info("session file changed", "path", path, "node", s.Node)
		}
	})
	if err != nil && ctx.Err() == nil {
		b.log.Warn("cannot watch the session file; its changes will not be logged", "err", err)
	}
}
