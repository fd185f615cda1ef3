package proc

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

func newWatcher(t *testing.T) *Watcher {
	t.Helper()
	w, err := NewWatcher()
	if errors.Is(err, ErrUnsupported) {
		testenv.SkipOrFail(t, "no pidfd watcher here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func TestWatcher(t *testing.T) {
	t.Parallel()
	w := newWatcher(t)
	cmd := exec.Command("sleep", "0.2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fired := make(chan struct{})
	if err := w.Watch(cmd.Process.Pid, func() { close(fired) }); errors.Is(err, ErrUnsupported) {
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
	if code, ok := ZombieStatus(cmd.Process.Pid); !ok || code != 0 {
		t.Fatalf("ZombieStatus = %d, %v; want 0, true (the process is not reaped yet)", code, ok)
	}
	cmd.Wait()
	if _, ok := ZombieStatus(cmd.Process.Pid); ok {
		t.Fatal("ZombieStatus reported a reaped process")
	}
	// A process that is already gone fires at once.
	gone := make(chan struct{})
	if err := w.Watch(cmd.Process.Pid, func() { close(gone) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("watching a gone process never fired")
	}
}

// A program killed by a signal is a zombie whose status says so.
func TestZombieSignaled(t *testing.T) {
	t.Parallel()
	w := newWatcher(t)
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	fired := make(chan struct{})
	if err := w.Watch(cmd.Process.Pid, func() { close(fired) }); err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher did not report the kill")
	}
	ws, ok := ZombieWait(cmd.Process.Pid)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("ZombieWait = %v (signaled %v), %v; want SIGTERM", ws, ws.Signaled(), ok)
	}
	if code, ok := ZombieStatus(cmd.Process.Pid); !ok || code != 128+int(syscall.SIGTERM) {
		t.Fatalf("ZombieStatus = %d, %v; want %d", code, ok, 128+int(syscall.SIGTERM))
	}
}

// After Close, a pending callback never runs and Watch refuses.
func TestWatcherClose(t *testing.T) {
	t.Parallel()
	w := newWatcher(t)
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	ran := make(chan struct{}, 1)
	if err := w.Watch(cmd.Process.Pid, func() { ran <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w.Close() // twice is harmless
	if err := w.Watch(cmd.Process.Pid, func() {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Watch after Close: %v, want ErrClosed", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case <-ran:
		t.Fatal("a callback ran after Close")
	default: // Close waited for the loop to end: nothing can run any more
	}
	if err := (&Watcher{}).Watch(0, func() {}); err == nil {
		t.Fatal("Watch(0) accepted")
	}
}

func TestParseStat(t *testing.T) {
	t.Parallel()
	fields := func(state, code string) string {
		f := make([]string, 50)
		for i := range f {
			f[i] = "0"
		}
		f[0], f[49] = state, code
		return strings.Join(f, " ")
	}
	for _, tc := range []struct {
		line string
		ws   syscall.WaitStatus
		ok   bool
	}{
		{"42 (sleep) " + fields("Z", "256"), 256, true},
		{"42 (a) b) (c) " + fields("Z", "9"), 9, true}, // a name holding ") "
		{"42 (sleep) " + fields("S", "0"), 0, false},   // alive
		{"42 (sleep) Z 1 2", 0, false},                 // too short
		{"42 sleep " + fields("Z", "0"), 0, false},     // no name
		{"42 (sleep) " + fields("Z", "x"), 0, false},
	} {
		ws, ok := ParseStat([]byte(tc.line))
		if ws != tc.ws || ok != tc.ok {
			t.Errorf("ParseStat(%.30q…) = %d %v, want %d %v", tc.line, ws, ok, tc.ws, tc.ok)
		}
	}
	if _, ok := ZombieWait(-1); ok {
		t.Error("ZombieWait(-1) reported a zombie")
	}
}
