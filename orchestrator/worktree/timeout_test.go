package worktree

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// A git call that runs out of time is killed with its whole process
// group: nothing it started is left running.
func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
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
	if !testenv.Until(5*time.Second, func() bool { return !(alive(pid)) }) {
		t.Fatalf("the timed-out git's child %d is still running", pid)
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

// A diff whose git hangs answers within its budget, with what it had and
// saying it was cut; the hung git and its children are gone.
func TestDiffOutOfTimeSaysCut(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	in := made(t, repo, "slow")
	write(t, filepath.Join(in.Path, "README"), "changed\n")
	real, _ := exec.LookPath("git")
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	fake := filepath.Join(dir, "git")
	// The text diff (a diff without --numstat) prints a little, then hangs.
	write(t, fake, "#!/bin/sh\nfor a; do [ \"$a\" = --numstat ] && exec '"+real+"' \"$@\"; done\nfor a; do if [ \"$a\" = diff ]; then printf 'diff --git a/README b/README\\n'; sleep 300 & echo $! > '"+pidFile+"'; wait; fi; done\nexec '"+real+"' \"$@\"\n")
	os.Chmod(fake, 0o755)
	saved := DiffBudget
	DiffBudget = 500 * time.Millisecond
	defer func() { DiffBudget = saved }()
	d, err := Git{Bin: fake}.DiffOf(ctx(t), in, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Cut, "in time") || !strings.HasPrefix(d.Text, "diff --git a/README") || d.Files != 1 {
		t.Fatalf("cut %q, text %q, files %d", d.Cut, d.Text, d.Files)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if !testenv.Until(5*time.Second, func() bool { return !(pid > 0 && alive(pid)) }) {
		t.Fatalf("the hung git's child %d still runs", pid)
	}
}
