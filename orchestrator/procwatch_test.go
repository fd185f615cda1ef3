package orchestrator

import (
	"os/exec"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

func TestProcWatcher(t *testing.T) {
	w, err := newProcWatcher()
	if err != nil {
		testenv.SkipOrFail(t, "no pidfd watcher here: %v", err)
	}
	defer w.close()
	cmd := exec.Command("sleep", "0.2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fired := make(chan struct{})
	if err := w.watch(cmd.Process.Pid, func() { close(fired) }); err == errNoPidfd {
		testenv.SkipOrFail(t, "%v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	// Not our child's death alone: the zombie (not yet reaped) also counts.
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not report the process's end")
	}
	if code, ok := zombieStatus(cmd.Process.Pid); !ok || code != 0 {
		t.Fatalf("zombieStatus = %d, %v; want 0, true (the process is not reaped yet)", code, ok)
	}
	cmd.Wait()
	if _, ok := zombieStatus(cmd.Process.Pid); ok {
		t.Fatal("zombieStatus reported a reaped process")
	}
	// A process that is already gone fires at once.
	gone := make(chan struct{})
	if err := w.watch(cmd.Process.Pid, func() { close(gone) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("watching a gone process never fired")
	}
}
