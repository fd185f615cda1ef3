package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Gemini API stand-in (Gemini CLI, GOOGLE_GEMINI_BASE_URL pointed
// here): POST …/models/MODEL:streamGenerateContent?alt=sse answered as
// Server-Sent Events of GenerateContentResponse chunks, :generateContent
// as one JSON response, :countTokens with a count. A Block with ToolName
// is a functionCall part; the tool's result comes back as a
// functionResponse part of the next request.

// GeminiRequest is the part of a generateContent request the fake reads.
type GeminiRequest struct {
	Contents []GeminiContent `json:"contents"`
	Tools    []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	// Method is the request's method after the colon
	// (streamGenerateContent, generateContent).
	Method string `json:"-"`
	// Header is the request's headers.
	Header http.Header `json:"-"`
}

// GeminiContent is one turn of the conversation.
type GeminiContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text             string          `json:"text"`
		FunctionCall     json.RawMessage `json:"functionCall"`
		FunctionResponse *struct {
			Name     string          `json:"name"`
			Response json.RawMessage `json:"response"`
		} `json:"functionResponse"`
	} `json:"parts"`
}

// HasTool reports whether the request declares a function of that name.
func (r *GeminiRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		for _, f := range t.FunctionDeclarations {
			if f.Name == name {
				return true
			}
		}
	}
	return false
}

// LastUserText is the text of the last user turn that has text.
func (r *GeminiRequest) LastUserText() string {
	for i := len(r.Contents) - 1; i >= 0; i-- {
		c := r.Contents[i]
		if c.Role != "user" {
			continue
		}
		var b strings.Builder
		for _, p := range c.Parts {
			b.WriteString(p.Text)
		}
		if b.Len() > 0 {
			return b.String()
		}
	}
	return ""
}

// UserText is the text of every user turn, joined.
func (r *GeminiRequest) UserText() string {
	var b strings.Builder
	for _, c := range r.Contents {
		if c.Role == "user" {
			for _, p := range c.Parts {
				b.WriteString(p.Text + "\n")
			}
		}
	}
	return b.String()
}

// LastFunctionResponse is the function response of the last turn, if the
// last turn is one ("" and false otherwise).
func (r *GeminiRequest) LastFunctionResponse() (string, bool) {
	if len(r.Contents) == 0 {
		return "", false
	}
	for _, p := range r.Contents[len(r.Contents)-1].Parts {
		if p.FunctionResponse != nil {
			return string(p.FunctionResponse.Response), true
		}
	}
	return "", false
}

// FunctionResponses are every function response's JSON, oldest first.
func (r *GeminiRequest) FunctionResponses() []string {
	var out []string
	for _, c := range r.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				out = append(out, string(p.FunctionResponse.Response))
			}
		}
	}
	return out
}

// GeminiScript decides the reply to one streamed request (the CLI's
// turns); other generateContent calls (its helpers) get a plain answer.
type GeminiScript func(req *GeminiRequest) Reply

// Gemini is a running Gemini API stand-in.
type Gemini struct {
	URL                     string
	script                  GeminiScript
	srv                     *http.Server
	recorder[GeminiRequest] // the streamed requests (the CLI's turns)
}

// StartGemini serves script on 127.0.0.1 (a free port).
func StartGemini(script GeminiScript) (*Gemini, error) {
	s := &Gemini{script: script}
	srv, base, err := serve(s)
	if err != nil {
		return nil, err
	}
	s.srv, s.URL = srv, base
	return s, nil
}

// Close stops the server.
func (s *Gemini) Close() error { return s.srv.Close() }

func geminiResponse(parts []map[string]any, finish string) map[string]any {
	c := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		c["finishReason"] = finish
	}
	return map[string]any{"candidates": []any{c}, "modelVersion": "gemini-stand-in",
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}
}

func (s *Gemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body := s.body(r)
	_, method, _ := strings.Cut(r.URL.Path, ":")
	switch method {
	case "countTokens":
		writeJSON(w, map[string]any{"totalTokens": 10})
		return
	case "streamGenerateContent", "generateContent":
	default:
		writeJSON(w, map[string]any{})
		return
	}
	req := decode[GeminiRequest](w, body, func(err error) any {
		return map[string]any{"error": map[string]any{"code": 400, "message": err.Error(), "status": "INVALID_ARGUMENT"}}
	})
	if req == nil {
		return
	}
	req.Method, req.Header = method, r.Header.Clone()
	if method == "generateContent" {
		// The CLI's helpers (routing, next speaker, titles): a plain
		// answer that asks nothing of them.
		writeJSON(w, geminiResponse([]map[string]any{{"text": "{}"}}, "STOP"))
		return
	}
	s.keep(req)
	reply := s.script(req)
	if reply.Status != 0 {
		writeStatus(w, reply.Status, map[string]any{"error": map[string]any{"code": reply.Status, "message": "fakemodel: scripted failure", "status": "INTERNAL"}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	chunk := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	if reply.Hold != nil {
		chunk(geminiResponse([]map[string]any{{"text": "thinking"}}, ""))
		select {
		case <-reply.Hold:
		case <-r.Context().Done():
		}
		return
	}
	if len(reply.Blocks) == 0 {
		reply.Blocks = []Block{{Text: "ok"}}
	}
	var parts []map[string]any
	for _, b := range reply.Blocks {
		if b.ToolName != "" {
			parts = append(parts, map[string]any{"functionCall": map[string]any{"name": b.ToolName, "args": b.ToolInput}})
		} else {
			parts = append(parts, map[string]any{"text": b.Text})
		}
	}
	chunk(geminiResponse(parts, "STOP"))
}
