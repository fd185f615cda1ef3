package orchestrator

import (
	"context"
	"time"
)

// detach ends the node's client and pump, leaving the session running.
func (n *node) detach() {
	if n.client == nil { // a node of a host not reached yet (remote.go)
		n.scr.Close()
		return
	}
	n.quitOnce.Do(func() {
		// tmux 3.3a can crash when a client leaves with the pane's output
		// queued for it: pause the pane for this client first.
		n.detaching.Store(true)
		if n.client.Err() == nil && !n.asleep.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			n.client.Pause(ctx, n.pane)
			cancel()
		}
		close(n.quit)
	})
	n.leaveClient()
	<-n.done
	n.stopRecording()
	n.scr.Close()
}
