package hosts

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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
