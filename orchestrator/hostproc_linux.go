package orchestrator

import "syscall"

// masterSysProcAttr makes the ssh master die with the orchestrator: a
// killed orchestrator leaves no connection behind.
func masterSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
