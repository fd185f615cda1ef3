package orchestrator

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
func (n *node) startLogs() {
	if len(n.meta.Logs) == 0 {
		return
	}
	lf, err := applog.Follow(n.meta.Logs, n.scr, n.done, n.log, n.env.Limits().StateDir)
	if err != nil {
		n.log.Warn("cannot follow logs", "err", err)
		return
	}
	n.tw.logs = lf
	select {
	case <-lf.Ready():
	case <-time.After(logsReadyWait):
		n.log.Warn("the logs' first open is slow: following them in the background", "wait", logsReadyWait)
	}
}

// changesWithLogs is the screen's changes since cursor plus, for a node
// with logs, the log lines read from cursor on.
func (n *node) changesWithLogs(cursor uint64) (tools.Changes, error) {
	if lf := n.tw.logs; lf != nil {
		return lf.ChangesSince(cursor)
	}
	return n.scr.ChangesSince(cursor)
}

// logLabels are the node's log labels and those whose file is missing.
func (n *node) logLabels() (labels, missing []string) {
	if lf := n.tw.logs; lf != nil {
		return lf.Labels()
	}
	labels = []string{}
	for _, s := range n.meta.Logs {
		labels = append(labels, s.Label)
	}
	return labels, nil
}
