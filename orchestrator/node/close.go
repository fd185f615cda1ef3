package node

import (
	"context"
	"time"
)

// Detach ends the node's client and pump, leaving the session running.
func (n *Node) Detach() {
	if n.Client == nil { // a node of a host not reached yet (orchestrator/hostnodes)
		n.Scr.Close()
		return
	}
	n.quitOnce.Do(func() {
		// tmux 3.3a can crash when a client leaves with the pane's output
		// queued for it: pause the pane for this client first.
		n.detaching.Store(true)
		if n.Client.Err() == nil && !n.Asleep.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			n.Client.Pause(ctx, n.Pane)
			cancel()
		}
		close(n.Quit)
	})
	n.leaveClient()
	<-n.Done
	n.StopRecording()
	n.Scr.Close()
}
