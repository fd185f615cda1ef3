package mcpserve

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/internal/fakeapi"
)

// The fake orchestrator of these tests (internal/fakeapi).
type fakeState = fakeapi.State

// newFakeState's session_info always answers as a healthy orchestrator:
// the bridge's handshake asks it whatever reply a test sets.
func newFakeState(t *testing.T) *fakeState {
	fs := fakeapi.New(t)
	fs.Backend.FixedSessionInfo = true
	return fs
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
