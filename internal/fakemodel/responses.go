package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The OpenAI Responses API stand-in (Codex): POST …/responses, streamed
// as Server-Sent Events (response.created, response.output_item.done per
// item, response.completed). A Block with ToolName is a function_call
// whose arguments are ToolInput; the tool's output comes back as a
// function_call_output item of the next request.

// ResponsesRequest is the part of a Responses API request the fake reads.
type ResponsesRequest struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Input  []json.RawMessage `json:"input"`
	Tools  []Tool            `json:"tools"`
	// Raw is the request's body.
	Raw []byte `json:"-"`
	// Header is the request's headers.
	Header http.Header `json:"-"`
}

// ResponsesItem is one decoded input item.
type ResponsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Name    string          `json:"name"`
	Output  json.RawMessage `json:"output"`
	Args    string          `json:"arguments"`
}

// Items decodes the input.
func (r *ResponsesRequest) Items() []ResponsesItem {
	out := make([]ResponsesItem, 0, len(r.Input))
	for _, raw := range r.Input {
		var it ResponsesItem
		_ = json.Unmarshal(raw, &it)
		out = append(out, it)
	}
	return out
}

// Text is a message item's text (its input_text/output_text parts).
func (it ResponsesItem) Text() string {
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(it.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text + "\n")
	}
	return b.String()
}

// OutputText is a function_call_output's output.
func (it ResponsesItem) OutputText() string {
	var s string
	if json.Unmarshal(it.Output, &s) == nil {
		return s
	}
	return string(it.Output)
}

// UserText is the text of every user message, joined.
func (r *ResponsesRequest) UserText() string {
	var b strings.Builder
	for _, it := range r.Items() {
		if it.Type == "message" && it.Role == "user" {
			b.WriteString(it.Text())
		}
	}
	return b.String()
}

// LastUserText is the last user message's text.
func (r *ResponsesRequest) LastUserText() string {
	last := ""
	for _, it := range r.Items() {
		if it.Type == "message" && it.Role == "user" {
			last = it.Text()
		}
	}
	return last
}

// ToolOutputs are the function_call_output items, oldest first.
func (r *ResponsesRequest) ToolOutputs() []ResponsesItem {
	var out []ResponsesItem
	for _, it := range r.Items() {
		if it.Type == "function_call_output" {
			out = append(out, it)
		}
	}
	return out
}

// HasTool reports whether the request offers a tool of that name.
func (r *ResponsesRequest) HasTool(name string) bool { return offers(r.Tools, name) }

// ToolNames are the names of the tools offered.
func (r *ResponsesRequest) ToolNames() []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Name)
	}
	return out
}

// ResponsesScript decides the reply to one Responses request.
type ResponsesScript func(req *ResponsesRequest) Reply

// Responses is a running Responses API stand-in.
type Responses struct {
	URL                        string // base URL, ending in /v1
	script                     ResponsesScript
	srv                        *http.Server
	recorder[ResponsesRequest] // the responses requests
}

// StartResponses serves script on 127.0.0.1 (a free port).
func StartResponses(script ResponsesScript) (*Responses, error) {
	s := &Responses{script: script}
	srv, base, err := serve(s)
	if err != nil {
		return nil, err
	}
	s.srv, s.URL = srv, base+"/v1"
	return s, nil
}

// Close stops the server.
func (s *Responses) Close() error { return s.srv.Close() }

func (s *Responses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := s.body(r)
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		writeJSON(w, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
		return
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		writeJSON(w, map[string]any{})
		return
	}
	req := decode[ResponsesRequest](w, body, func(err error) any {
		return map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": err.Error()}}
	})
	if req == nil {
		return
	}
	req.Raw, req.Header = body, r.Header.Clone()
	n := s.keep(req)
	reply := s.script(req)
	if reply.Status != 0 {
		writeStatus(w, reply.Status, map[string]any{"error": map[string]any{"type": "server_error", "code": "server_error", "message": "fakemodel: scripted failure"}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	event := func(data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", data["type"], b)
		if fl != nil {
			fl.Flush()
		}
	}
	id := fmt.Sprintf("resp_%02d", n)
	event(map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	if reply.Hold != nil {
		select {
		case <-reply.Hold:
		case <-r.Context().Done():
		}
		return // the stream ends unfinished
	}
	if len(reply.Blocks) == 0 {
		reply.Blocks = []Block{{Text: "ok"}}
	}
	for i, b := range reply.Blocks {
		var item map[string]any
		if b.ToolName != "" {
			args, _ := json.Marshal(b.ToolInput)
			item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%02d_%d", n, i), "call_id": fmt.Sprintf("call_%02d_%d", n, i),
				"name": b.ToolName, "arguments": string(args), "status": "completed"}
		} else {
			mid := fmt.Sprintf("msg_%02d_%d", n, i)
			event(map[string]any{"type": "response.output_item.added", "output_index": i, "item": map[string]any{"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []any{}}})
			event(map[string]any{"type": "response.output_text.delta", "item_id": mid, "output_index": i, "content_index": 0, "delta": b.Text})
			item = map[string]any{"type": "message", "id": mid, "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": b.Text, "annotations": []any{}}}}
		}
		event(map[string]any{"type": "response.output_item.done", "output_index": i, "item": item})
	}
	event(map[string]any{"type": "response.completed", "response": map[string]any{"id": id, "status": "completed",
		"usage": map[string]any{"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15}}})
}
