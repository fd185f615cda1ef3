package proc

import "syscall"

// DieWithParent is the SysProcAttr of a child that the kernel kills
// (SIGKILL) when the orchestrator dies: a killed orchestrator leaves no
// ssh master or connection behind.
func DieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
