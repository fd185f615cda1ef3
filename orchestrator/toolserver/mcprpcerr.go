package toolserver

import (
	"bytes"
	"net/http"
	"strings"
)

// rpcErrorWriter keeps the engine's own plain-text error replies (mcp-go
// writes "Invalid session ID" and a few others with http.Error-like
// helpers, e.g. when a session ends between the door's check and the
// engine's) from reaching the client: every /mcp reply is JSON-RPC. A
// reply with status ≥ 400 that is not JSON is held and, at finish,
// written as a JSON-RPC error with the same status and its text as the
// message. Everything else passes through (event streams flush as
// before).
type rpcErrorWriter struct {
	http.ResponseWriter
	status int // a held error's status; 0 while passing through
	held   bytes.Buffer
}

func (w *rpcErrorWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	if code >= 400 && !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rpcErrorWriter) Write(p []byte) (int, error) {
	if w.status != 0 {
		if w.held.Len() < 4<<10 {
			w.held.Write(p[:min(len(p), 4<<10-w.held.Len())])
		}
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush passes through while the reply is not a held error.
func (w *rpcErrorWriter) Flush() {
	if w.status == 0 {
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *rpcErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes a held error as JSON-RPC.
func (w *rpcErrorWriter) finish() {
	if w.status == 0 {
		return
	}
	h := w.ResponseWriter.Header()
	h.Del("Content-Length")
	h.Del("X-Content-Type-Options")
	code := codeRefused
	switch w.status {
	case http.StatusNotFound:
		code = codeNoSession
	case http.StatusBadRequest:
		code = codeInvalidBatch // -32600, invalid request
	}
	msg := strings.TrimSpace(w.held.String())
	if msg == "" {
		msg = http.StatusText(w.status)
	}
	if w.status == http.StatusNotFound && strings.Contains(strings.ToLower(msg), "session") {
		msg += ": the MCP session is unknown or ended; send initialize again"
	}
	rpcFail(w.ResponseWriter, w.status, code, "%s", msg)
}

// serveEngine runs the engine with its plain-text errors made JSON-RPC.
func (d *mcpDoor) serveEngine(w http.ResponseWriter, r *http.Request) {
	rw := &rpcErrorWriter{ResponseWriter: w}
	defer rw.finish()
	if f := d.api.hooks.mcpEngine; f != nil {
		f(r)
	}
	d.engine.ServeHTTP(rw, r)
}
