package toolserver

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// trace_close closes an open trace (its id then answers not_found) and is
// idempotent: closing it again answers closed: false.
func TestTraceCloseThroughAPI(t *testing.T) {
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	p := filepath.Join(t.TempDir(), "c.cast")
	os.WriteFile(p, []byte("{\"version\":2,\"width\":20,\"height\":5}\n[0.5,\"o\",\"hello\"]\n"), 0o600)
	var opened tools.TraceOpened
	apiOK(t, op, "trace_open", apiM{"path": p}, &opened)
	var closed tools.TraceClosed
	apiOK(t, op, "trace_close", apiM{"trace": opened.Trace}, &closed)
	if !closed.Closed || closed.Trace != opened.Trace {
		t.Fatalf("trace_close: %+v", closed)
	}
	apiFail(t, op, "trace_overview", apiM{"trace": opened.Trace}, tools.KindNotFound)
	apiOK(t, op, "trace_close", apiM{"trace": opened.Trace}, &closed)
	if closed.Closed {
		t.Fatalf("closing a closed trace: %+v", closed)
	}
}

// trace_open on a recording directory whose session.cast is a FIFO answers
// a usage error promptly (the call never waits for a writer), and the
// server goes on answering.
func TestTraceOpenFIFOThroughAPI(t *testing.T) {
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	rec := t.TempDir()
	fifo := filepath.Join(rec, "session.cast")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("cannot make a FIFO: %v", err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	done := make(chan tools.Result, 1)
	go func() { done <- apiCall(t, s.op(), "trace_open", apiM{"path": rec}) }()
	select {
	case res := <-done:
		if res.OK || res.Kind != tools.KindUsage {
			t.Fatalf("trace_open on a FIFO cast: %+v", res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("trace_open on a FIFO cast did not answer")
	}
	apiOK(t, s.op(), "terminal_list", nil, nil)
}
