package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/termsprawl/termsprawl/tools"
)

// message is the envelope of one JSON-RPC message, as far as the
// transport needs to know it.
type message struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params json.RawMessage `json:"params"`
}

func (m message) hasID() bool {
	return len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null"))
}

// handshake reports whether the method opens a connection: initialize,
// or server/discover of the stateless protocol (2026-07-28). Both make
// the real session_info call first (CONTRACT §6).
func handshake(method string) bool {
	return method == string(mcp.MethodInitialize) || method == string(mcp.MethodServerDiscover)
}

// handleLine answers or dispatches one line.
func (b *bridge) handleLine(ctx context.Context, line []byte, tooLong bool, wg *sync.WaitGroup) {
	if tooLong {
		id := idFromPrefix(line)
		b.log.Warn("refused an over-long message", "limit_bytes", MaxLine)
		b.writeError(id, rpcInvalidRequest, fmt.Sprintf("message refused: a line may be at most %d bytes (256 KiB); send less per call", MaxLine), nil)
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
	switch msg[0] {
	case '[':
		b.handleBatch(ctx, msg, wg)
		return
	case '{':
	default:
		b.writeError(nil, rpcInvalidRequest, "Invalid Request: send one JSON-RPC object per line", nil)
		return
	}
	var m message
	_ = json.Unmarshal(msg, &m)
	raw := json.RawMessage(append([]byte(nil), msg...))
	switch {
	case !m.hasID():
		// Notifications (and replies to us) in order, on the read loop.
		b.notify(ctx, m, raw)
	case handshake(m.Method):
		// The handshake runs on the read loop: nothing overtakes it.
		if reply := b.checkReachable(ctx, m.ID); reply != nil {
			b.write(reply)
			return
		}
		b.respond(ctx, m, raw)
	default:
		b.track(m.ID)
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.respond(ctx, m, raw)
		}()
	}
}

// notify hands a notification to mcp-go. notifications/cancelled also
// marks its request so that its reply is dropped (CONTRACT §10: no
// response for a cancelled request); mcp-go cancels the request's context.
func (b *bridge) notify(ctx context.Context, m message, raw json.RawMessage) {
	if m.Method == string(mcp.MethodNotificationCancelled) {
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) == nil && len(p.RequestID) > 0 {
			b.imu.Lock()
			if r, ok := b.inflight[idKey(p.RequestID)]; ok {
				r.cancelled = true
			}
			b.imu.Unlock()
		}
	}
	b.dispatch(ctx, raw)
}

// idKey normalises a JSON-RPC id for the in-flight table (1 and 1.0 are
// different ids in JSON-RPC, "1" and 1 too: the raw text is the key).
func idKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }

func (b *bridge) track(id json.RawMessage) {
	b.imu.Lock()
	b.inflight[idKey(id)] = &inflightReq{}
	b.imu.Unlock()
}

// finish removes a request from the in-flight table and reports whether
// it was cancelled.
func (b *bridge) finish(id json.RawMessage) bool {
	b.imu.Lock()
	defer b.imu.Unlock()
	r, ok := b.inflight[idKey(id)]
	delete(b.inflight, idKey(id))
	return ok && r.cancelled
}

// respond handles one request and writes its reply unless the client
// cancelled it meanwhile.
func (b *bridge) respond(ctx context.Context, m message, raw json.RawMessage) {
	resp := b.dispatch(ctx, raw)
	if b.finish(m.ID) {
		b.log.Debug("reply dropped: the request was cancelled", "method", m.Method)
		if b.cfg.dropped != nil {
			b.cfg.dropped(m.ID)
		}
		return
	}
	if resp != nil {
		b.write(resp)
	}
}

// dispatch runs one message through mcp-go and returns its reply (nil for
// notifications).
func (b *bridge) dispatch(ctx context.Context, raw json.RawMessage) (resp mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			b.log.Error("panic in handler", "panic", r)
			resp = nil
		}
	}()
	return b.srv.HandleMessage(ctx, raw)
}

// handleBatch answers a JSON-RPC batch. Protocol 2025-03-26 requires
// batches; 2024-11-05 had none and 2025-06-18 removed them, so there the
// batch is refused with one error. Under 2025-03-26 the requests run
// concurrently and their replies go out as one array (none when the batch
// held only notifications); an initialize inside a batch is refused, as
// that version says.
func (b *bridge) handleBatch(ctx context.Context, msg []byte, wg *sync.WaitGroup) {
	var items []json.RawMessage
	if err := json.Unmarshal(msg, &items); err != nil || len(items) == 0 {
		b.writeError(nil, rpcInvalidRequest, "Invalid Request: an empty or malformed batch", nil)
		return
	}
	if v := b.sess.ProtocolVersion(); v != mcp.ProtocolVersion20250326 {
		if v == "" {
			v = "none yet (initialize first, alone)"
		}
		b.writeError(nil, rpcInvalidRequest, fmt.Sprintf("Invalid Request: JSON-RPC batches are only part of MCP protocol %s; this session negotiated %s: send one message per line", mcp.ProtocolVersion20250326, v), nil)
		return
	}
	replies := make([]any, len(items))
	var bwg sync.WaitGroup
	for i, it := range items {
		it = bytes.TrimSpace(it)
		var m message
		if len(it) == 0 || it[0] != '{' || json.Unmarshal(it, &m) != nil {
			replies[i] = errorReply(nil, rpcInvalidRequest, "Invalid Request: a batch element must be a JSON-RPC object", nil)
			continue
		}
		switch {
		case !m.hasID():
			b.notify(ctx, m, it)
		case handshake(m.Method):
			replies[i] = errorReply(m.ID, rpcInvalidRequest, "Invalid Request: initialize must not be part of a batch", nil)
		default:
			b.track(m.ID)
			bwg.Add(1)
			go func() {
				defer bwg.Done()
				resp := b.dispatch(ctx, it)
				if !b.finish(m.ID) && resp != nil {
					replies[i] = resp
				}
			}()
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		bwg.Wait()
		out := make([]any, 0, len(replies))
		for _, r := range replies {
			if r != nil {
				out = append(out, r)
			}
		}
		if len(out) > 0 {
			b.write(out)
		}
	}()
}

// checkReachable makes the real session_info call a handshake needs; on
// failure it returns the error reply to send instead of the handshake's.
func (b *bridge) checkReachable(ctx context.Context, id json.RawMessage) any {
	res := tools.Call(ctx, b.cfg.Session, tools.Request{Operation: "session_info"}, tools.CallOptions{Wait: b.cfg.Wait, Retry: b.cfg.Retry, Timeout: b.cfg.CallTimeout})
	if res.OK {
		var info struct {
			Node       string `json:"node"`
			Role       string `json:"role"`
			InstanceID string `json:"instance_id"`
		}
		_ = json.Unmarshal(res.Value, &info)
		b.log.Info("connected to termsprawl", "node", info.Node, "role", info.Role, "instance", info.InstanceID)
		b.connected.Store(true)
		return nil
	}
	if errors.Is(res.Err(), tools.ErrNotRunning) {
		b.refusedDown.Store(true)
	}
	b.log.Error("handshake refused: termsprawl is not reachable", "error", res.Error, "kind", res.Kind)
	return errorReply(id, rpcUnreachable, "termsprawl is not reachable, so this MCP server has nothing to offer: "+res.Error, res)
}
