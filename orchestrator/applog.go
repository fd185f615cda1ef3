package orchestrator

import (
	"github.com/termsprawl/termsprawl/orchestrator/applog"
	"github.com/termsprawl/termsprawl/tools"
)

// The engine's side of orchestrator/applog: one follower per node with
// logs, started with its pump and ended with it.

// resolveLogs checks a launch's logs (applog.Resolve).
func resolveLogs(specs []tools.LogSpec, cwd string) ([]tools.LogSpec, error) {
	return applog.Resolve(specs, cwd)
}

// startLogs starts following the node's logs, if it has any, until its
// pump ends.
func (n *node) startLogs() {
	if len(n.meta.Logs) == 0 {
		return
	}
	lf, err := applog.Follow(n.meta.Logs, n.scr, n.done, n.log)
	if err != nil {
		n.log.Warn("cannot follow logs", "err", err)
		return
	}
	n.tw.logs = lf
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
