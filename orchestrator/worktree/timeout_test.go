package worktree

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A git call that runs out of time is killed with its whole process
// group: nothing it started is left running.
func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	fake := filepath.Join(dir, "git")
	write(t, fake, "#!/bin/sh\nsleep 300 &\necho $! > "+pidFile+"\nwait\n")
	if err := os.Chmod(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	g := Git{Bin: fake, Timeout: 300 * time.Millisecond}
	_, err := g.read(ctx(t), dir, "status")
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v, want ErrTimeout", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the timed-out git's child %d is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}
