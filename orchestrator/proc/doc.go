// Package proc watches processes the orchestrator did not start and
// reads what the kernel knows of them: a pidfd per process and one epoll
// goroutine tell when each ends (Watcher), a zombie's /proc entry gives
// its wait status before anyone reaped it (ZombieStatus, ZombieWait), and
// DieWithParent makes a child die with the orchestrator.
//
// tmux 3.3a sometimes misses the death of a pane's program (the child
// stays a zombie: no status, no pane-died hook); the engine asks this
// package instead. It knows nothing of nodes or tmux. The Linux parts use
// golang.org/x/sys/unix; elsewhere Watcher reports ErrUnsupported and the
// engine relies on tmux's hook and its quiet-time check.
package proc
