package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
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

// MaxMCPLine is the longest JSON-RPC line the bridge accepts (CONTRACT §9),
// not counting the line end.
const MaxMCPLine = 256 << 10

// JSON-RPC error codes the bridge answers itself.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	// rpcUnreachable is the implementation-defined server error of a failed
	// handshake: termsprawl could not be reached.
	rpcUnreachable = -32000
)

// mcpConfig configures the bridge.
type mcpConfig struct {
	// Session is the absolute path of the session file.
	Session string
	// Wait is passed to the initialize check (CallOptions.Wait).
	Wait time.Duration
	// CallTimeout caps one call (0: the client's default).
	CallTimeout time.Duration
}

// bridge is the MCP stdio server: mcp-go's MCPServer behind our own line
// transport, which enforces the line limit and answers parse errors.
type bridge struct {
	cfg  mcpConfig
	srv  *server.MCPServer
	log  *slog.Logger
	out  io.Writer
	wmu  sync.Mutex // one JSON-RPC message per Write
	sess *bridgeSession
	// connected: an initialize reached termsprawl; refusedDown: one was
	// refused because termsprawl is not running (then, if none ever
	// connected, the bridge exits 3 like every other command).
	connected, refusedDown atomic.Bool
}

// runMCP serves MCP on stdin/stdout until stdin ends or ctx is done.
func runMCP(ctx context.Context, cfg mcpConfig, stdin io.Reader, stdout, stderr io.Writer) int {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("component", "termsprawlctl mcp")
	b := newBridge(cfg, stdout, log)
	if err := b.serve(ctx, stdin); err != nil {
		log.Error("stopped", "err", err)
		return ExitNo
	}
	if b.refusedDown.Load() && !b.connected.Load() {
		return ExitNotRunning
	}
	return ExitOK
}

func newBridge(cfg mcpConfig, out io.Writer, log *slog.Logger) *bridge {
	b := &bridge{cfg: cfg, log: log, out: out}
	overview, _ := tools.Guide(tools.TopicOverview)
	b.srv = server.NewMCPServer("termsprawl", version(),
		server.WithInstructions(overview),
		server.WithToolCapabilities(false),
		server.WithRecovery(),
	)
	for _, op := range tools.Operations() {
		b.srv.AddTool(mcpTool(op), b.handler(op))
	}
	return b
}

// mcpTool describes op for tools/list: the table's name, description and
// strict schema, and all four annotations set explicitly.
func mcpTool(op *tools.Operation) mcp.Tool {
	a := op.Annotations
	return mcp.Tool{
		Name:           op.Name,
		Description:    op.Description,
		RawInputSchema: op.InputSchemaJSON(),
		Annotations: mcp.ToolAnnotation{
			ReadOnlyHint:    mcp.ToBoolPtr(a.ReadOnly),
			DestructiveHint: mcp.ToBoolPtr(a.Destructive),
			IdempotentHint:  mcp.ToBoolPtr(a.Idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(a.OpenWorld),
		},
	}
}

// handler forwards tools/call to tools.Call.
func (b *bridge) handler(op *tools.Operation) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.RawArguments
		if len(bytes.TrimSpace(args)) == 0 && req.Params.Arguments != nil {
			raw, err := json.Marshal(req.Params.Arguments)
			if err != nil {
				return toolResult(tools.ErrResult(tools.Errorf(tools.KindUsage, "%s: arguments cannot be encoded: %v", op.Name, err))), nil
			}
			args = raw
		}
		args = tools.NormalizeArgs(args)
		if res, refused := refuseOverMCP(op, args); refused {
			b.log.Warn("refused over MCP", "operation", op.Name, "kind", res.Kind)
			return toolResult(res), nil
		}
		res := tools.Call(ctx, b.cfg.Session, tools.Request{Operation: op.Name, Args: args}, tools.CallOptions{Timeout: b.cfg.CallTimeout})
		if !res.OK && res.Kind == tools.KindUnavailable {
			b.log.Warn("termsprawl unreachable", "operation", op.Name, "error", res.Error)
		}
		return toolResult(res), nil
	}
}

// refuseOverMCP applies the MCP-only rules before any call is made:
// dialog_answer may only deny, or pick a selection for a question
// (CONTRACT §8.4); the orchestrator also refuses a permission approved by
// anyone but the operator, so a selection cannot smuggle an approval.
func refuseOverMCP(op *tools.Operation, args json.RawMessage) (tools.Result, bool) {
	if op.Name != "dialog_answer" {
		return tools.Result{}, false
	}
	if err := op.Validate(args); err != nil {
		return tools.ErrResult(err), true
	}
	var a struct {
		Mode      string `json:"mode"`
		Selection string `json:"selection"`
	}
	_ = json.Unmarshal(args, &a)
	if a.Mode == "deny" || a.Selection != "" {
		return tools.Result{}, false
	}
	e := tools.Errorf(tools.KindNotRun, "dialog_answer with mode %q was not run: %s; over MCP only mode \"deny\" is possible (the human answers with `termsprawl answer ID %s`)", a.Mode, tools.DialogMCPRefusal, a.Mode).
		WithDetails("operation", op.Name).WithDetails("mode", a.Mode)
	return tools.ErrResult(e), true
}

// toolResult turns an envelope into an MCP result: a value carrying a
// base64 PNG "image" becomes an image block plus the envelope as text
// (with the image replaced by a note); anything else is one text block
// with the raw envelope. isError is !ok.
func toolResult(res tools.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: !res.OK}
	if res.OK {
		if img, rest, ok := splitImage(res.Value); ok {
			res.Value = rest
			text, _ := json.Marshal(res)
			out.Content = []mcp.Content{mcp.NewImageContent(img, "image/png"), mcp.NewTextContent(string(text))}
			return out
		}
	}
	text, err := json.Marshal(res)
	if err != nil {
		text, _ = json.Marshal(tools.ErrResult(tools.Errorf(tools.KindInternal, "encode result: %v", err)))
		out.IsError = true
	}
	out.Content = []mcp.Content{mcp.NewTextContent(string(text))}
	return out
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// splitImage finds value.image holding a base64 PNG and returns it and the
// value with the image replaced by a short note.
func splitImage(value json.RawMessage) (string, json.RawMessage, bool) {
	t := bytes.TrimSpace(value)
	if len(t) == 0 || t[0] != '{' || !bytes.Contains(t, []byte(`"image"`)) {
		return "", nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(t, &m); err != nil {
		return "", nil, false
	}
	var img string
	if err := json.Unmarshal(m["image"], &img); err != nil || img == "" {
		return "", nil, false
	}
	data, err := base64.StdEncoding.DecodeString(img)
	if err != nil || !bytes.HasPrefix(data, pngMagic) {
		return "", nil, false
	}
	note, _ := json.Marshal(fmt.Sprintf("PNG image, %d bytes: sent as MCP image content", len(data)))
	m["image"] = note
	rest, err := json.Marshal(m)
	if err != nil {
		return "", nil, false
	}
	return img, rest, true
}

// bridgeSession is the one client session of the stdio transport.
type bridgeSession struct {
	notes       chan mcp.JSONRPCNotification
	initialized atomic.Bool
}

func (s *bridgeSession) SessionID() string                                   { return "stdio" }
func (s *bridgeSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notes }
func (s *bridgeSession) Initialize()                                         { s.initialized.Store(true) }
func (s *bridgeSession) Initialized() bool                                   { return s.initialized.Load() }

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
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b.write(rpcError{JSONRPC: "2.0", ID: id, Error: rpcErrorBody{Code: code, Message: msg, Data: data}})
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
func (b *bridge) serve(ctx context.Context, stdin io.Reader) error {
	b.sess = &bridgeSession{notes: make(chan mcp.JSONRPCNotification, 100)}
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
			data, tooLong, err := readLine(r, MaxMCPLine)
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

// handleLine answers or dispatches one message.
func (b *bridge) handleLine(ctx context.Context, line []byte, tooLong bool, wg *sync.WaitGroup) {
	if tooLong {
		id := idFromPrefix(line)
		b.log.Warn("refused an over-long message", "limit_bytes", MaxMCPLine)
		b.writeError(id, rpcInvalidRequest, fmt.Sprintf("message refused: a line may be at most %d bytes (256 KiB); send less per call", MaxMCPLine), nil)
		return
	}
	msg := bytes.TrimSpace(line)
	if len(msg) == 0 {
		return
	}
	if !json.Valid(msg) {
		b.writeError(nil, rpcParseError, "Parse error: the line is not valid JSON", nil)
		return
	}
	if msg[0] != '{' {
		b.writeError(nil, rpcInvalidRequest, "Invalid Request: send one JSON-RPC object per line (batches are not supported)", nil)
		return
	}
	var base struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(msg, &base)
	hasID := len(base.ID) > 0 && !bytes.Equal(base.ID, []byte("null"))
	raw := json.RawMessage(append([]byte(nil), msg...))

	switch {
	case !hasID:
		// Notifications (and replies to us) in order, on the read loop.
		b.dispatch(ctx, raw)
	case base.Method == string(mcp.MethodInitialize):
		// The handshake runs on the read loop: nothing overtakes it.
		if b.checkReachable(ctx, base.ID) {
			b.dispatch(ctx, raw)
		}
	default:
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.dispatch(ctx, raw)
		}()
	}
}

func (b *bridge) dispatch(ctx context.Context, raw json.RawMessage) {
	var resp mcp.JSONRPCMessage
	func() {
		defer func() {
			if r := recover(); r != nil {
				b.log.Error("panic in handler", "panic", r)
			}
		}()
		resp = b.srv.HandleMessage(ctx, raw)
	}()
	if resp != nil {
		b.write(resp)
	}
}

// checkReachable makes the real session_info call initialize needs; on
// failure it answers the request with an error and returns false.
func (b *bridge) checkReachable(ctx context.Context, id json.RawMessage) bool {
	res := tools.Call(ctx, b.cfg.Session, tools.Request{Operation: "session_info"}, tools.CallOptions{Wait: b.cfg.Wait, Timeout: b.cfg.CallTimeout})
	if res.OK {
		var info struct {
			Node       string `json:"node"`
			Role       string `json:"role"`
			InstanceID string `json:"instance_id"`
		}
		_ = json.Unmarshal(res.Value, &info)
		b.log.Info("connected to termsprawl", "node", info.Node, "role", info.Role, "instance", info.InstanceID)
		b.connected.Store(true)
		return true
	}
	if errors.Is(res.Err(), tools.ErrNotRunning) {
		b.refusedDown.Store(true)
	}
	b.log.Error("initialize refused: termsprawl is not reachable", "error", res.Error, "kind", res.Kind)
	b.writeError(id, rpcUnreachable, "termsprawl is not reachable, so this MCP server has nothing to offer: "+res.Error, res)
	return false
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
// reading stderr.
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
// anyway; this is for the humans reading stderr.
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
