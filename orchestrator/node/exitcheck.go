package node

import (
	"time"
)

// Why an exit seen by the process watcher waits for tmux
//
// The pidfd watcher (watchProcess) hears of the program's end at the same
// moment tmux gets its SIGCHLD, and often before tmux has read the
// program's last output from the pty: during a flood tmux stops reading a
// pane whose control client lags behind, so the last lines can still sit
// in the pty when the program exits. The watcher's report then started a
// seed at once, tmux answered it with the pane still alive and its screen
// without those lines, and the exit was published: a text wait for the
// last line returned "exited before the text wait was satisfied" although
// the line came a moment later (1 in about 40 floods of 40 MB). Only tmux
// knows when it has read everything: once it marks the pane dead it reads
// no more, and whatever it read is in the stream before the seed's reply.
// So a watcher's report is published by a seed in which tmux reports the
// pane dead; until then the seed only confirms that the program is a
// zombie and looks again (tmux's pane-died hook normally comes first).

// Re-checks of an exit tmux has not confirmed: after exitCheck, then
// twice as long each time, maxExitChecks in all (about 1.6 s); after
// that a program that is still a zombie counts as exited (tmux never
// reaped it).
const (
	exitCheck     = 25 * time.Millisecond
	maxExitChecks = 6
)

// confirmExit decides, in a seed in which tmux reports the pane alive,
// whether an exit the process watcher reported (code) is published now.
// Only the pump goroutine calls it (from reseed).
func (n *Node) confirmExit(code int) (bool, int) {
	pid := n.Pid()
	// On the pane's machine: a host's pid is read there (CONTRACT §23).
	zcode, zombie := n.ZombieStatus(pid)
	if n.hooks().ExitUnconfirmed != nil {
		n.hooks().ExitUnconfirmed(n, zombie)
	}
	if !zombie {
		// tmux reaped it (its pane-died hook reports the exit with the
		// status) or the program is alive: nothing to publish.
		n.exitChecks = 0
		return false, 0
	}
	if n.exitChecks >= maxExitChecks {
		n.Log.Debug("tmux never confirmed the exit of the pane's program", "pid", pid)
		n.exitChecks = 0
		return true, zcode
	}
	n.Mu.Lock()
	if n.pendingExit == nil {
		n.pendingExit = &code
	}
	n.Mu.Unlock()
	time.AfterFunc(exitCheck<<n.exitChecks, n.RequestReseed)
	n.exitChecks++
	return false, 0
}
