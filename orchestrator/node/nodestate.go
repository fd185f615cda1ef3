package node

import "github.com/termsprawl/termsprawl/tools"

// nodeState is a node's life as one immutable value: its status, exit
// code, program pid, whether its session is gone and why its program
// ended when not by itself. A node publishes a new value through an
// atomic pointer (node.st) each time one of them changes, so a reader
// loads the whole state in one step and never sees a status of one
// moment with the reason of another (TestStatusAndExitReasonNeverTear).
type State struct {
	Status     string
	ExitCode   *int
	pid        int
	gone       bool   // the tmux session no longer exists
	ExitReason string // why the program ended, when not by itself (the server died)
	// changed is closed when a state with another status (or exit code,
	// or end) is published; states that change only the pid share it.
	changed chan struct{}
}

// newState is the state a node starts in.
func newState(status, reason string) *State {
	return &State{Status: status, ExitReason: reason, changed: make(chan struct{})}
}

// Load returns the node's current state, read in one step.
func (n *Node) Load() *State { return n.st.Load() }

// update publishes the state f makes of a copy of the current one;
// f reports whether it changed anything. With signal, the waiters on
// the old state's changed channel are woken. Writers take turns under
// n.stateMu; readers take no lock.
func (n *Node) update(signal bool, f func(s *State) bool) bool {
	n.stateMu.Lock()
	defer n.stateMu.Unlock()
	old := n.st.Load()
	next := *old
	if !f(&next) {
		return false
	}
	if signal {
		next.changed = make(chan struct{})
	}
	n.st.Store(&next)
	if signal {
		close(old.changed)
	}
	return true
}

// State returns status, exit code and whether the session is gone.
func (n *Node) State() (string, *int, bool) {
	s := n.Load()
	return s.Status, s.ExitCode, s.gone
}

// ExitState is the node's status, exit code, whether its session is gone
// and why its program ended when not by itself, from one published
// state: a concurrent exit (markLost sets status and reason together) is
// seen whole or not at all, never as a running node with an exit reason.
func (n *Node) ExitState() (status string, code *int, gone bool, reason string) {
	s := n.Load()
	if h := n.hooks().StateRead; h != nil {
		h(n)
	}
	return s.Status, s.ExitCode, s.gone, s.ExitReason
}

// statusWait returns the status and a channel closed when it changes.
func (n *Node) statusWait() (string, <-chan struct{}) {
	s := n.Load()
	return s.Status, s.changed
}

// Pid is the pid of the node's program (0: not known).
func (n *Node) Pid() int { return n.Load().pid }

// setPid publishes the program's pid (waiters are not woken).
func (n *Node) setPid(pid int) {
	n.update(false, func(s *State) bool {
		if s.pid == pid {
			return false
		}
		s.pid = pid
		return true
	})
}

// SetStatus records the program's status and tells the OnStatus hook
// when it changed.
func (n *Node) SetStatus(status string, code *int) {
	if status == tools.StatusExited && n.hooks().Exiting != nil {
		n.hooks().Exiting(n)
	}
	if n.updateStatus(status, code) && n.Env != nil {
		if status == tools.StatusExited && code != nil && n.Meta.Host == "" {
			n.Env.KeepExit(n.Meta.ID, *code) // the recorded exit (lost.go)
		}
		n.Env.StatusChanged()
	}
}

func (n *Node) updateStatus(status string, code *int) bool {
	return n.update(true, func(s *State) bool {
		if s.Status == status && (code == nil || (s.ExitCode != nil && *s.ExitCode == *code)) {
			return false
		}
		s.Status = status
		if code != nil {
			c := *code
			s.ExitCode = &c
			if status == tools.StatusExited {
				n.recordExit(c) // in the recording before the exit is published
			}
		}
		return true
	})
}

// MarkGone records that the node's tmux session no longer exists.
func (n *Node) MarkGone() {
	n.update(true, func(s *State) bool {
		if s.gone {
			return false
		}
		s.gone = true
		n.BeginClose()
		s.Status = tools.StatusExited
		return true
	})
}

// MarkLost records that the node's program was lost with its tmux server:
// the node stays listed, exited, with the reason, until it is closed.
func (n *Node) MarkLost(reason string) { n.markEnded(tools.StatusExited, reason) }

// MarkListedLost ends a mirror whose node loseNode listed lost: its
// waiters see status lost (wait.go), not an exit.
func (n *Node) MarkListedLost(reason string) { n.markEnded(tools.StatusLost, reason) }

func (n *Node) markEnded(status, reason string) {
	n.update(true, func(s *State) bool {
		if s.gone {
			return false
		}
		s.gone = true
		s.ExitReason = reason
		s.Status = status
		return true
	})
}
