//go:build !linux

package orchestrator

import "syscall"

// masterSysProcAttr: no parent-death signal outside Linux; Close ends the
// master.
func masterSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
