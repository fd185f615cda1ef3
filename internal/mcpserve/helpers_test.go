package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// recordedCall is one call the fake orchestrator received.
type recordedCall struct {
	Node string
	Op   string
	Args json.RawMessage
}

// fakeBackend stands in for the orchestrator behind tools.NewHandler.
type fakeBackend struct {
	mu     sync.Mutex // guards tokens, calls and reply
	tokens map[string]tools.Identity
	calls  []recordedCall
	// reply answers a call; nil means {"ok":true,"value":{"op":OP}}.
	reply func(ctx context.Context, op string, args json.RawMessage) tools.Result
}

func (f *fakeBackend) Authenticate(token string) (tools.Identity, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for tok, id := range f.tokens {
		if tools.TokenEqual(tok, token) {
			return id, true
		}
	}
	return tools.Identity{}, false
}

func (f *fakeBackend) Handle(ctx context.Context, id tools.Identity, op *tools.Operation, args json.RawMessage) tools.Result {
	f.mu.Lock()
	f.calls = append(f.calls, recordedCall{Node: id.Node, Op: op.Name, Args: append(json.RawMessage(nil), args...)})
	reply := f.reply
	f.mu.Unlock()
	if op.Name == "session_info" {
		return tools.OKResult(map[string]any{"node": id.Node, "role": id.Role, "instance_id": "fake-1", "version": "test"})
	}
	if reply != nil {
		return reply(ctx, op.Name, args)
	}
	return tools.OKResult(map[string]any{"op": op.Name})
}

func (f *fakeBackend) Calls() []recordedCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recordedCall(nil), f.calls...)
}

func (f *fakeBackend) setReply(r func(ctx context.Context, op string, args json.RawMessage) tools.Result) {
	f.mu.Lock()
	f.reply = r
	f.mu.Unlock()
}

// fakeState is a temporary state directory served by a fakeBackend.
type fakeState struct {
	Dir      string
	Agent    string // sessions/agent1.json
	Backend  *fakeBackend
	Endpoint tools.Endpoint
	srv      *httptest.Server
}

// newFakeState writes endpoint.json and an agent session file, and serves
// POST /call with the real handler in front of a fake backend.
func newFakeState(t *testing.T) *fakeState {
	t.Helper()
	dir := t.TempDir()
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	fb := &fakeBackend{tokens: map[string]tools.Identity{}}
	fs := &fakeState{Dir: dir, Backend: fb}
	tok, err := tools.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	fb.tokens[tok] = tools.Identity{Node: "agent1", Role: tools.RoleAgent}
	fs.Agent = tools.SessionPath(dir, "agent1")
	if err := tools.WriteSession(fs.Agent, tools.Session{Node: "agent1", Token: tok, Role: tools.RoleAgent}); err != nil {
		t.Fatal(err)
	}
	fs.listen(t)
	return fs
}

// listen serves the fake orchestrator on a fresh port and writes its
// endpoint.json.
func (fs *fakeState) listen(t *testing.T) {
	t.Helper()
	ln, err := tools.ListenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	hostPort := ln.Addr().String()
	srv := httptest.NewUnstartedServer(tools.NewHandler(fs.Backend, func() string { return hostPort }))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	fs.srv = srv
	fs.Endpoint = tools.Endpoint{URL: tools.EndpointURL(hostPort), InstanceID: "fake-" + hostPort, PID: os.Getpid(), Version: "test"}
	fs.writeEndpoint(t)
}

// stop ends the fake orchestrator as a crash would: the port closes and
// endpoint.json goes away.
func (fs *fakeState) stop(t *testing.T) {
	t.Helper()
	fs.srv.Close()
	fs.removeEndpoint(t)
}

func (fs *fakeState) writeEndpoint(t *testing.T) {
	t.Helper()
	if err := tools.WriteEndpoint(tools.EndpointPath(fs.Dir), fs.Endpoint); err != nil {
		t.Fatal(err)
	}
}

func (fs *fakeState) removeEndpoint(t *testing.T) {
	t.Helper()
	if err := os.Remove(tools.EndpointPath(fs.Dir)); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// decodeEnvelope parses a tool result envelope.
func decodeEnvelope(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not a JSON envelope: %v\n%s", err, s)
	}
	return m
}
