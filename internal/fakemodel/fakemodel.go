// Package fakemodel is a small scripted stand-in for the Anthropic
// Messages API on 127.0.0.1, for tests that run the real Claude Code CLI
// (ANTHROPIC_BASE_URL pointed here, a dummy key): no key, no network.
//
// It answers POST /v1/messages, streamed as Server-Sent Events when the
// request asks for it (the CLI does), else as one JSON message, and
// answers every other path with an empty JSON object, recording it. What
// each turn says is decided by a Script from the request's messages.
package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// Block is one content block of a reply: text, or a tool call.
type Block struct {
	Text string
	// ToolName and ToolInput make a tool_use block.
	ToolName  string
	ToolInput map[string]any
}

// Reply is one assistant turn.
type Reply struct {
	Blocks []Block
	// Status, when not 0, answers with this HTTP status and an API error
	// body instead of a message (e.g. 500: the model's API failed), with
	// x-should-retry: false so clients do not retry.
	Status int
	// Hold, when not nil, keeps a streamed reply open after its first
	// event until Hold is closed or the client goes away (a turn in
	// progress, to interrupt); the stream then ends unfinished.
	Hold <-chan struct{}
}

// Script decides the reply to one request. It sees the decoded request.
type Script func(req *Request) Reply

// Request is the part of a Messages API request the fake reads.
type Request struct {
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools"`
}

// Tool is a tool a request offers (Messages and Responses APIs).
type Tool struct {
	Type string `json:"type"` // Responses: "function", …
	Name string `json:"name"`
}

// offers reports whether tools has one of that name.
func offers(tools []Tool, name string) bool {
	return slices.ContainsFunc(tools, func(t Tool) bool { return t.Name == name })
}

// Message is one message of the conversation.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// ContentBlock is one decoded block of a message's content.
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
	Input     json.RawMessage `json:"input"`
}

// Blocks decodes a message's content (a string is one text block).
func (m Message) Blocks() []ContentBlock {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []ContentBlock{{Type: "text", Text: s}}
	}
	var bs []ContentBlock
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

// ToolResultText is the text of a tool_result block.
func (b ContentBlock) ToolResultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var parts []ContentBlock
	_ = json.Unmarshal(b.Content, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

// HasTool reports whether the request offers a tool of that name.
func (r *Request) HasTool(name string) bool { return offers(r.Tools, name) }

// ToolResults are the tool_result blocks of the conversation, oldest
// first (the CLI may add a user message of its own after them).
func (r *Request) ToolResults() []ContentBlock {
	var out []ContentBlock
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Blocks() {
			if b.Type == "tool_result" {
				out = append(out, b)
			}
		}
	}
	return out
}

// Server is a running fake.
type Server struct {
	URL               string
	script            Script
	srv               *http.Server
	recorder[Request] // the /v1/messages requests
}

// Start serves script on 127.0.0.1 (a free port). Close stops it.
func Start(script Script) (*Server, error) {
	s := &Server{script: script}
	srv, base, err := serve(s)
	if err != nil {
		return nil, err
	}
	s.srv, s.URL = srv, base
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// recorder keeps what a stand-in received: its decoded requests of
// type R and the method and path of every request, in order.
type recorder[R any] struct {
	mu       sync.Mutex // guards requests and paths (and the embedder's own fields it names)
	requests []*R
	paths    []string
}

// Requests are the model requests received so far.
func (c *recorder[R]) Requests() []*R {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*R(nil), c.requests...)
}

// Paths are the method and path of every request received, in order.
func (c *recorder[R]) Paths() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.paths...)
}

// body records r's method and path and returns its body.
func (c *recorder[R]) body(r *http.Request) []byte {
	c.mu.Lock()
	c.paths = append(c.paths, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	b, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	return b
}

// keep records a model request and returns its number (1 for the first).
func (c *recorder[R]) keep(req *R) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = append(c.requests, req)
	return len(c.requests)
}

// decode parses body as a request of type R. A body that is not JSON is
// answered 400 with invalid(err), and decode returns nil.
func decode[R any](w http.ResponseWriter, body []byte, invalid func(error) any) *R {
	var req R
	if err := json.Unmarshal(body, &req); err != nil {
		writeStatus(w, http.StatusBadRequest, invalid(err))
		return nil
	}
	return &req
}

// writeStatus answers status with v as JSON (a scripted or a decoding
// failure).
func writeStatus(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// serve runs h on 127.0.0.1 at a free port; the serving goroutine ends
// when the returned server is closed. base is its http:// URL.
func serve(h http.Handler) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("fakemodel: listen: %w", err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String(), nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := s.body(r)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		if strings.HasSuffix(r.URL.Path, "/count_tokens") {
			writeJSON(w, map[string]any{"input_tokens": 10})
			return
		}
		writeJSON(w, map[string]any{})
		return
	}
	req := decode[Request](w, body, func(err error) any {
		return map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": err.Error()}}
	})
	if req == nil {
		return
	}
	n := s.keep(req)
	reply := s.script(req)
	if reply.Status != 0 {
		w.Header().Set("x-should-retry", "false")
		writeStatus(w, reply.Status, map[string]any{"type": "error", "error": map[string]any{"type": "api_error", "message": "fakemodel: scripted failure"}})
		return
	}
	if reply.Hold != nil {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprintf(w, "event: message_start\ndata: %s\n\n", mustJSON(map[string]any{"type": "message_start", "message": map[string]any{
			"id": fmt.Sprintf("msg_%02d", n), "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
			"stop_reason": nil, "stop_sequence": nil, "usage": usage()}}))
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		select {
		case <-reply.Hold:
		case <-r.Context().Done():
		}
		return // the stream ends unfinished
	}
	if len(reply.Blocks) == 0 {
		reply.Blocks = []Block{{Text: "ok"}}
	}
	msg, stop := message(n, req.Model, reply)
	if !req.Stream {
		writeJSON(w, msg)
		return
	}
	stream(w, n, req.Model, reply, stop)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func usage() map[string]any {
	return map[string]any{"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
}

func blockJSON(n, i int, b Block) map[string]any {
	if b.ToolName != "" {
		in := b.ToolInput
		if in == nil {
			in = map[string]any{}
		}
		return map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d_%d", n, i), "name": b.ToolName, "input": in}
	}
	return map[string]any{"type": "text", "text": b.Text}
}

func message(n int, model string, r Reply) (map[string]any, string) {
	stop := "end_turn"
	var content []any
	for i, b := range r.Blocks {
		if b.ToolName != "" {
			stop = "tool_use"
		}
		content = append(content, blockJSON(n, i, b))
	}
	return map[string]any{"id": fmt.Sprintf("msg_%02d", n), "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage()}, stop
}

// stream writes the reply as the Messages API's event stream.
func stream(w http.ResponseWriter, n int, model string, r Reply, stop string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if fl != nil {
			fl.Flush()
		}
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%02d", n), "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage()}})
	for i, b := range r.Blocks {
		if b.ToolName != "" {
			start := blockJSON(n, i, b)
			input, _ := json.Marshal(start["input"])
			start["input"] = map[string]any{}
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		} else {
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b.Text}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5}})
	event("message_stop", map[string]any{"type": "message_stop"})
}
