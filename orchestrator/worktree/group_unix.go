//go:build unix

package worktree

import (
	"os/exec"
	"syscall"
)

// groupKill puts cmd in its own process group and makes its context's
// end kill the whole group (git's children, a hook's sleep, included).
func groupKill(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
