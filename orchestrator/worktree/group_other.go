//go:build !unix

package worktree

import "os/exec"

// groupKill: no process groups here; the context kills git itself.
func groupKill(*exec.Cmd) {}
