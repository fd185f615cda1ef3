package cli

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
	mu     sync.Mutex
	tokens map[string]tools.Identity
	calls  []recordedCall
	// reply answers a call; nil means {"ok":true,"value":{"op":OP}}.
	reply func(op string, args json.RawMessage) tools.Result
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
	if reply != nil {
		return reply(op.Name, args)
	}
	if op.Name == "session_info" {
		return tools.OKResult(map[string]any{"node": id.Node, "role": id.Role, "instance_id": "fake-1", "version": "test"})
	}
	return tools.OKResult(map[string]any{"op": op.Name})
}

func (f *fakeBackend) Calls() []recordedCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recordedCall(nil), f.calls...)
}

func (f *fakeBackend) setReply(r func(op string, args json.RawMessage) tools.Result) {
	f.mu.Lock()
	f.reply = r
	f.mu.Unlock()
}

// fakeState is a temporary state directory served by a fakeBackend.
type fakeState struct {
	Dir      string
	Agent    string // sessions/agent1.json
	Operator string // sessions/operator.json
	Backend  *fakeBackend
	Endpoint tools.Endpoint
	srv      *httptest.Server
}

// newFakeState writes endpoint.json, an agent and an operator session
// file, and serves POST /call with the real handler in front of a fake
// backend.
func newFakeState(t *testing.T) *fakeState {
	t.Helper()
	dir := t.TempDir()
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	fb := &fakeBackend{tokens: map[string]tools.Identity{}}
	fs := &fakeState{Dir: dir, Backend: fb}
	for _, s := range []struct{ node, role string }{{"agent1", tools.RoleAgent}, {tools.OperatorNode, tools.RoleOperator}} {
		tok, err := tools.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		fb.tokens[tok] = tools.Identity{Node: s.node, Role: s.role}
		path := tools.SessionPath(dir, s.node)
		if err := tools.WriteSession(path, tools.Session{Node: s.node, Token: tok, Role: s.role}); err != nil {
			t.Fatal(err)
		}
		if s.role == tools.RoleAgent {
			fs.Agent = path
		} else {
			fs.Operator = path
		}
	}
	ln, err := tools.ListenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	hostPort := ln.Addr().String()
	fs.srv = httptest.NewUnstartedServer(tools.NewHandler(fb, func() string { return hostPort }))
	fs.srv.Listener.Close()
	fs.srv.Listener = ln
	fs.srv.Start()
	t.Cleanup(fs.srv.Close)
	fs.Endpoint = tools.Endpoint{URL: tools.EndpointURL(hostPort), InstanceID: "fake-1", PID: os.Getpid(), Version: "test"}
	fs.writeEndpoint(t)
	return fs
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
	mu sync.Mutex
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

// runCtl runs MainCtl and returns exit code, stdout and stderr.
func runCtl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := MainCtl(args, bytes.NewReader(nil), &out, &errb)
	return code, out.String(), errb.String()
}

// runHuman runs MainTermsprawl and returns exit code, stdout and stderr.
func runHuman(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := MainTermsprawl(args, &out, &errb)
	return code, out.String(), errb.String()
}

// decodeEnvelope parses a printed tool result.
func decodeEnvelope(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("output is not a JSON envelope: %v\n%s", err, s)
	}
	return m
}
