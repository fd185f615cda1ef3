package orchestrator

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/tools"
)

// TestWatcherExitWaitsForTmux widens the race behind the false "exited
// before the text wait was satisfied" (exitcheck.go) as far as it goes:
// the process watcher's report arrives while the program has not even
// written its last line. The exit must not be published then; the wait
// for the last line matches and the exit comes with the program's code.
func TestWatcherExitWaitsForTmux(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	id := launch(t, o, "sh", "-c", "echo started; cat "+fifo+" >/dev/null; echo LAST-LINE; exit 7")
	waitText(t, o, id, "started")
	n := o.node(id)
	after := n.Scr.Revision()

	checked := make(chan bool, 8)
	o.hooks.ExitUnconfirmed = func(hn *node.Node, zombie bool) {
		if hn == n {
			checked <- zombie
		}
	}

	type waited struct {
		r   tools.WaitResult
		err error
	}
	done := make(chan waited, 1)
	go func() {
		r, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitText, Text: "LAST-LINE", After: &after, TimeoutMS: 20000})
		done <- waited{r, err}
	}()

	// The watcher's report, before tmux (or the program) is done.
	n.RequestExit(7)
	select {
	case zombie := <-checked:
		if zombie {
			t.Fatal("the program is a zombie before it was let go")
		}
	case w := <-done:
		t.Fatalf("the wait ended on the watcher's report: %+v %v", w.r, w.err)
	}
	if status, _, _ := n.State(); status == tools.StatusExited {
		t.Fatal("an exit tmux did not confirm was published while the program still ran")
	}
	select {
	case w := <-done:
		t.Fatalf("the wait ended before the last line: %+v %v", w.r, w.err)
	default:
	}

	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	w := <-done
	var te *tools.Error
	if errors.As(w.err, &te) && te.Kind == tools.KindConflict {
		t.Fatalf("the wait failed as if the program had exited first: %v", w.err)
	}
	if w.err != nil || !w.r.Matched {
		t.Fatalf("wait for the last line: %+v %v", w.r, w.err)
	}
	r, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 20000})
	if err != nil || !r.Matched || r.ExitCode == nil || *r.ExitCode != 7 {
		t.Fatalf("exit: %+v %v (exit code %v)", r, err, derefInt(r.ExitCode))
	}
}
