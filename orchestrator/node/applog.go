package node

import (
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/applog"
	"github.com/termsprawl/termsprawl/tools"
)

// logsReadyWait bounds how long attach waits for the follower's first
// opens (so that lines written right after a launch are followed). The
// opens never block on a FIFO (O_NONBLOCK); this only bounds a file
// system that hangs, and adoption goes on without it.
const logsReadyWait = 2 * time.Second

// startLogs starts following the node's logs, if it has any, until its
// pump ends. Nothing inside the state dir is ever followed, whatever the
// paths became since the launch (the follower checks each open).
func (n *Node) startLogs() {
	if len(n.Meta.Logs) == 0 {
		return
	}
	lf, err := applog.Follow(n.Meta.Logs, n.Scr, n.Done, n.Log, n.Env.Limits().StateDir)
	if err != nil {
		n.Log.Warn("cannot follow logs", "err", err)
		return
	}
	n.TW.Logs = lf
	select {
	case <-lf.Ready():
	case <-time.After(logsReadyWait):
		n.Log.Warn("the logs' first open is slow: following them in the background", "wait", logsReadyWait)
	}
}

// changesWithLogs is the screen's changes since cursor plus, for a node
// with logs, the log lines read from cursor on.
func (n *Node) changesWithLogs(cursor uint64) (tools.Changes, error) {
	if lf := n.TW.Logs; lf != nil {
		return lf.ChangesSince(cursor)
	}
	return n.Scr.ChangesSince(cursor)
}

// logLabels are the node's log labels and those whose file is missing.
func (n *Node) logLabels() (labels, missing []string) {
	if lf := n.TW.Logs; lf != nil {
		return lf.Labels()
	}
	labels = []string{}
	for _, s := range n.Meta.Logs {
		labels = append(labels, s.Label)
	}
	return labels, nil
}
