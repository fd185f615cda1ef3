package orchestrator

import (
	"os"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// DefaultKeepScreens is Config.KeepScreens's default: how often the
// last screens of changed nodes are written to disk (CONTRACT §25: at
// most 5 s old while a node shows output).
const DefaultKeepScreens = 2 * time.Second

// kept is what the keeper last wrote for a node.
type kept struct {
	rev    uint64
	status string
}

// keepScreens is the one writer of last screens (nodes/<id>.screen.json):
// every interval it writes, for each local node whose screen or status
// changed since its last write, the published screen (a copy taken under
// the screen's lock, never the pump's work). It ends when Close closes
// o.stop.
func (o *Orchestrator) keepScreens(every time.Duration) {
	defer o.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	last := map[*node.Node]kept{}
	for {
		select {
		case <-o.stop:
			return
		case <-t.C:
		}
		o.keepOnce(last)
		if o.hooks.kept != nil {
			o.hooks.kept()
		}
	}
}

// keepOnce writes the changed screens of one round; last is the keeper's.
func (o *Orchestrator) keepOnce(last map[*node.Node]kept) {
	seen := make(map[*node.Node]bool, len(last))
	for _, n := range o.sortedNodes() {
		if n.Meta.Host != "" || n.IsClosing() {
			continue // a host's nodes are the host's business
		}
		seen[n] = true
		// One published state, read without the callers' seam (exitState's
		// stateRead hook is for the reads that answer a call).
		st := n.Load()
		status, code, reason := st.Status, st.ExitCode, st.ExitReason
		if status == tools.StatusUnreachable {
			continue // unattached: nothing new to show
		}
		if status == tools.StatusExited && reason != "" {
			// Ended with its tmux server, not by itself: lost at the next
			// start, not exited.
			status = tools.StatusRunning
		}
		rev := n.Scr.Revision()
		if k, ok := last[n]; ok && k.rev == rev && k.status == status {
			continue
		}
		ks := statefile.KeptScreen{Screen: n.Snapshot(), Status: status, SavedAt: time.Now().UTC()}
		if status == tools.StatusExited {
			ks.ExitCode = code
		}
		path := o.screenPath(n.Meta.ID)
		if err := tools.WriteJSONAtomic(path, ks); err != nil {
			n.Log.Warn("keep the last screen", "err", err)
			continue
		}
		if o.node(n.Meta.ID) != n || n.IsClosing() {
			// Its life ended while we wrote: its files are gone, and so
			// is this one; a node lost meanwhile keeps the screen its
			// loss saved (loseNode).
			if l := o.lost.Get(n.Meta.ID); l != nil {
				_ = tools.WriteJSONAtomic(path, l.Screen)
			} else {
				os.Remove(path)
			}
			continue
		}
		last[n] = kept{rev: ks.Revision, status: status}
		o.screensKept.Add(1)
	}
	for n := range last {
		if !seen[n] {
			delete(last, n)
		}
	}
}
