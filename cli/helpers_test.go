package cli

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/internal/fakeapi"
)

// The fake orchestrator of these tests (internal/fakeapi).
type (
	recordedCall = fakeapi.Call
	fakeState    = fakeapi.State
)

func newFakeState(t *testing.T) *fakeState { return fakeapi.New(t) }

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
