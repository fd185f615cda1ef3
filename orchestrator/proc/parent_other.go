//go:build !linux

package proc

import "syscall"

// DieWithParent: no parent-death signal outside Linux; the orchestrator's
// Close ends its children.
func DieWithParent() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
