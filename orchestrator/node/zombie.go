package node

import (
	"context"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/proc"
)

// ZombieWaitOn is zombieWait on srv's machine: a host's pid is read on
// the host (CONTRACT §23), never in this machine's /proc.
func ZombieWaitOn(srv hosts.Server, pid int) (syscall.WaitStatus, bool) {
	if pid <= 0 {
		return 0, false
	}
	if !srv.Remote() {
		return proc.ZombieWait(pid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	b, err := srv.ProcStat(ctx, pid)
	if err != nil {
		return 0, false
	}
	return proc.ParseStat(b)
}

// ZombieStatus is zombieStatus on the node's server's machine.
func (n *Node) ZombieStatus(pid int) (int, bool) { return proc.WaitCode(ZombieWaitOn(n.Srv, pid)) }
