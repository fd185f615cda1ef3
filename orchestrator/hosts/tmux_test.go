package hosts

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// fakeSSH is a prefix that runs the command here the way ssh runs it on a
// host: its words joined and given to a shell.
func fakeSSH(t *testing.T) []string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fakessh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n[ \"$1\" = -- ] && shift\nexec sh -c \"$*\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return []string{p, "--"}
}

// A server's Signal, ProcStat and PidGone act on its own machine: here
// for a local server, through the prefix for a host's.
func TestProgramsOnTheServersMachine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		srv  *Tmux
	}{
		{"local", &Tmux{socket: "x", stop: make(chan struct{})}},
		{"remote", Remote{Bin: "tmux", Socket: "x", Prefix: fakeSSH(t)}.Unconnected()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.Command("sh", "-c", "trap '' HUP; exec sleep 600")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			reaped := make(chan struct{})
			go func() {
				cmd.Wait()
				close(reaped)
			}()
			defer cmd.Process.Kill()
			if b, err := tc.srv.ProcStat(ctx, pid); err != nil || len(b) == 0 {
				t.Fatalf("ProcStat of a live pid: %q, %v", b, err)
			}
			if tc.srv.PidGone(ctx, pid) {
				t.Fatal("PidGone of a live pid")
			}
			// Once it runs sleep, the shell has set its trap (an ignored
			// signal stays ignored across exec); before, a loaded machine
			// could deliver the SIGHUP first.
			testenv.Eventually(t, 15*time.Second, func() bool {
				b, _ := tc.srv.ProcStat(ctx, pid)
				return strings.Contains(string(b), "(sleep)")
			}, testenv.Msg("the shell never ran sleep"))
			tc.srv.Signal(ctx, pid, syscall.SIGHUP) // ignored
			if tc.srv.PidGone(ctx, pid) {
				t.Fatal("PidGone after an ignored SIGHUP")
			}
			tc.srv.Signal(ctx, pid, syscall.SIGKILL)
			select {
			case <-reaped:
			case <-ctx.Done():
				t.Fatal("SIGKILL did not end the program")
			}
			if !tc.srv.PidGone(ctx, pid) {
				t.Fatal("PidGone of an ended pid is false")
			}
		})
	}
}

// countingSSH is fakeSSH that appends a line to the file it returns for
// every session it opens.
func countingSSH(t *testing.T) (prefix []string, count string) {
	t.Helper()
	dir := t.TempDir()
	count = filepath.Join(dir, "count")
	p := filepath.Join(dir, "fakessh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho x >>"+count+"\n[ \"$1\" = -- ] && shift\nexec sh -c \"$*\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return []string{p, "--"}, count
}

// Ending many programs on a host signals them and confirms them gone in
// one ssh session each time, not one per program: 64 confirmations one
// session after another ran a close of 64 nodes out of its deadline on a
// loaded machine (TestRemoteHostRemove64).
func TestManyProgramsOneRoundTrip(t *testing.T) {
	t.Parallel()
	prefix, count := countingSSH(t)
	srv := Remote{Bin: "tmux", Socket: "x", Prefix: prefix}.Unconnected()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n = 16
	var pids []int
	reaped := make([]chan struct{}, n)
	for i := range n {
		cmd := exec.Command("sh", "-c", "trap '' HUP; exec sleep 600")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		pids = append(pids, cmd.Process.Pid)
		reaped[i] = make(chan struct{})
		go func() {
			cmd.Wait()
			close(reaped[i])
		}()
	}
	sessions := func() int {
		b, _ := os.ReadFile(count)
		return len(b) / 2
	}
	live, err := srv.LivePids(ctx, append(pids, 0))
	if err != nil || len(live) != n {
		t.Fatalf("LivePids of %d live programs: %v, %v", n, live, err)
	}
	srv.SignalAll(ctx, pids, syscall.SIGHUP) // ignored
	if live := WaitPidsGone(ctx, srv, pids[:1], 0); !live[pids[0]] {
		t.Fatalf("WaitPidsGone after an ignored SIGHUP: %v", live)
	}
	before := sessions()
	srv.SignalAll(ctx, pids, syscall.SIGKILL)
	for i := range n {
		select {
		case <-reaped[i]:
		case <-ctx.Done():
			t.Fatalf("SIGKILL did not end program %d", i)
		}
	}
	if live := WaitPidsGone(ctx, srv, pids, CloseGrace); len(live) != 0 {
		t.Fatalf("WaitPidsGone of ended programs: %v", live)
	}
	if got := sessions() - before; got != 2 {
		t.Fatalf("killing and confirming %d programs opened %d ssh sessions, want 2", n, got)
	}
}
