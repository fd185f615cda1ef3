//go:build !linux

package tmuxctl

import "syscall"

// childSysProcAttr is the portable fallback: a process group of its own,
// no parent-death signal (Pdeathsig is Linux-only). If the orchestrator
// dies, the child still ends: its stdin (our pipe) reaches end of file and
// a control client detaches and exits on end of input.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
