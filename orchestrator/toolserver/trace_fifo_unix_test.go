//go:build unix

package toolserver

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// trace_open on a recording directory whose session.cast is a FIFO answers
// a usage error promptly (the call never waits for a writer), and the
// server goes on answering.
func TestTraceOpenFIFOThroughAPI(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	rec := t.TempDir()
	fifo := filepath.Join(rec, "session.cast")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		testenv.SkipOrFail(t, "cannot make a FIFO: %v", err)
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
