// Package fakeapi is a fake orchestrator for the clients' tests (the
// CLIs and the MCP bridge): the real /call handler (tools.NewHandler) in
// front of a Backend that records every call and answers with a reply the
// test sets, served on a loopback port with the state dir's endpoint.json
// and the session files of an agent node and of the operator.
package fakeapi

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// Call is one call the fake orchestrator received.
type Call struct {
	Node string
	Op   string
	Args json.RawMessage
}

// Reply answers a call in place of the orchestrator.
type Reply func(ctx context.Context, op string, args json.RawMessage) tools.Result

// Backend stands in for the orchestrator behind tools.NewHandler.
type Backend struct {
	mu     sync.Mutex // guards tokens, calls and reply
	tokens map[string]tools.Identity
	calls  []Call
	// reply answers a call; nil means session_info as a healthy
	// orchestrator and {"ok":true,"value":{"op":OP}} for the rest.
	reply Reply
	// FixedSessionInfo answers session_info as a healthy orchestrator
	// also when a reply is set (the MCP bridge's handshake needs it).
	FixedSessionInfo bool
}

// Authenticate implements tools.Backend.
func (f *Backend) Authenticate(token string) (tools.Identity, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for tok, id := range f.tokens {
		if tools.TokenEqual(tok, token) {
			return id, true
		}
	}
	return tools.Identity{}, false
}

// Handle implements tools.Backend: it records the call and answers it.
func (f *Backend) Handle(ctx context.Context, id tools.Identity, op *tools.Operation, args json.RawMessage) tools.Result {
	f.mu.Lock()
	f.calls = append(f.calls, Call{Node: id.Node, Op: op.Name, Args: append(json.RawMessage(nil), args...)})
	reply, fixed := f.reply, f.FixedSessionInfo
	f.mu.Unlock()
	sessionInfo := op.Name == "session_info"
	if reply != nil && !(fixed && sessionInfo) {
		return reply(ctx, op.Name, args)
	}
	if sessionInfo {
		return tools.OKResult(map[string]any{"node": id.Node, "role": id.Role, "instance_id": "fake-1", "version": "test"})
	}
	return tools.OKResult(map[string]any{"op": op.Name})
}

// Calls returns the calls received so far, in order.
func (f *Backend) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// SetReply sets how calls are answered (nil: the defaults).
func (f *Backend) SetReply(r Reply) {
	f.mu.Lock()
	f.reply = r
	f.mu.Unlock()
}

// State is a temporary state directory served by a Backend.
type State struct {
	Dir      string
	Agent    string // sessions/agent1.json
	Operator string // sessions/operator.json
	Backend  *Backend
	Endpoint tools.Endpoint
	srv      *httptest.Server
}

// New writes an agent and an operator session file in a temporary state
// dir and serves POST /call there (see Listen).
func New(t testing.TB) *State {
	t.Helper()
	dir := t.TempDir()
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	fb := &Backend{tokens: map[string]tools.Identity{}}
	fs := &State{Dir: dir, Backend: fb}
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
	fs.Listen(t)
	return fs
}

// Listen serves the fake orchestrator on a fresh port and writes its
// endpoint.json (instance "fake-HOST:PORT": a new one each time).
func (fs *State) Listen(t testing.TB) {
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
	fs.WriteEndpoint(t)
}

// Close closes the port and leaves endpoint.json: a stale endpoint.
func (fs *State) Close() { fs.srv.Close() }

// Stop ends the fake orchestrator as a crash would: the port closes and
// endpoint.json goes away.
func (fs *State) Stop(t testing.TB) {
	t.Helper()
	fs.Close()
	fs.RemoveEndpoint(t)
}

// WriteEndpoint writes fs.Endpoint as the state dir's endpoint.json.
func (fs *State) WriteEndpoint(t testing.TB) {
	t.Helper()
	if err := tools.WriteEndpoint(tools.EndpointPath(fs.Dir), fs.Endpoint); err != nil {
		t.Fatal(err)
	}
}

// RemoveEndpoint removes the state dir's endpoint.json.
func (fs *State) RemoveEndpoint(t testing.TB) {
	t.Helper()
	if err := os.Remove(tools.EndpointPath(fs.Dir)); err != nil {
		t.Fatal(err)
	}
}
