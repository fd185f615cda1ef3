package tmuxctl

import "syscall"

// childSysProcAttr is how the tmux -C child is started on Linux: in a
// process group of its own (a ^C meant for the orchestrator's terminal
// does not reach it) and killed by the kernel if the thread that started
// it dies (Pdeathsig), so an orchestrator that crashes never leaves a
// control client behind whose queued output could wedge the tmux server.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
