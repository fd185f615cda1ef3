package toolserver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// trace_close closes an open trace (its id then answers not_found) and is
// idempotent: closing it again answers closed: false.
func TestTraceCloseThroughAPI(t *testing.T) {
	t.Parallel()
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
