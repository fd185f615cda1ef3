package tools

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	retryBaseDelay = 2 * time.Millisecond
	retryMaxDelay = 10 * time.Millisecond
	os.Exit(m.Run())
}

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// testState is a state directory with one agent session file.
type testState struct {
	dir, session, endpoint string
}

func newTestState(t *testing.T) testState {
	t.Helper()
	dir := t.TempDir()
	if err := EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	st := testState{dir: dir, session: SessionPath(dir, "node1"), endpoint: EndpointPath(dir)}
	if err := WriteSession(st.session, Session{Node: "node1", Token: testToken, Role: RoleAgent}); err != nil {
		t.Fatal(err)
	}
	return st
}

func (st testState) writeEndpoint(t *testing.T, url, instance string) {
	t.Helper()
	if err := WriteEndpoint(st.endpoint, Endpoint{URL: url, InstanceID: instance, PID: os.Getpid(), Version: "test"}); err != nil {
		t.Fatal(err)
	}
}

// fakeBackend knows one token per node and echoes calls.
type fakeBackend struct {
	tokens map[string]Identity

	mu    sync.Mutex // guards calls
	calls int
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{tokens: map[string]Identity{testToken: {Node: "node1", Role: RoleAgent}}}
}

func (b *fakeBackend) Authenticate(token string) (Identity, bool) {
	for t, id := range b.tokens {
		if TokenEqual(t, token) {
			return id, true
		}
	}
	return Identity{}, false
}

func (b *fakeBackend) Handle(ctx context.Context, id Identity, op *Operation, args json.RawMessage) Result {
	b.mu.Lock()
	b.calls++
	b.mu.Unlock()
	if op.Name == "terminal_close" {
		return ErrResult(Errorf(KindNotFound, "no terminal %q", "x"))
	}
	if op.Name == "agent_status" {
		panic("boom")
	}
	return OKResult(map[string]any{"op": op.Name, "node": id.Node, "args": args})
}

// startHandler serves NewHandler on an httptest server and returns its
// /call URL.
func startHandler(t *testing.T, b Backend) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = NewHandler(b, func() string { return srv.Listener.Addr().String() })
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, srv.URL + "/call"
}

// recorder is a raw TCP listener that records every byte it receives.
type recorder struct {
	mu    sync.Mutex // guards conns and data
	conns int
	data  strings.Builder
}

func serveFunc(t *testing.T, f http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}
