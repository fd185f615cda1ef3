package node

import "github.com/termsprawl/termsprawl/orchestrator/proc"

// watchProcess asks the orchestrator's process watcher to tell when the
// pane's program ends; its status is then read from /proc if tmux has not
// reaped it, or tmux's pane-died hook follows.
func (n *Node) watchProcess(pid int) {
	if n.Env.Procs() == nil || n.Meta.Host != "" {
		return // a remote pane's pid is not ours to watch: tmux's hook tells
	}
	err := n.Env.Procs().Watch(pid, func() {
		if code, ok := proc.ZombieStatus(pid); ok {
			n.RequestExit(code)
			return
		}
		n.Env.PaneDied()
	})
	if err != nil {
		n.Log.Debug("cannot watch the pane's process", "pid", pid, "err", err)
	}
}

// RequestExit records that tmux reported the pane dead. The pump reseeds
// first and then publishes the status, so whoever wakes on the exit sees
// the program's final screen: tmux 3.3a can drop a dying pane's last
// output for control clients, so that screen is taken from tmux itself.
func (n *Node) RequestExit(code int) {
	n.Mu.Lock()
	n.pendingExit = &code
	n.Mu.Unlock()
	n.RequestReseed()
}
