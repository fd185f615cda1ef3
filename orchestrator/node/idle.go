package node

import (
	"context"
	"time"
)

// DecideSleep decides, under idleMu, whether the node goes to sleep: no
// wait in progress and nothing observed it for idle. If so it is marked
// asleep at once, so an observer arriving during the switch-off sees it
// asleep and wakes it (the pump serves that wake after sleep). It returns
// how long ago the node was last observed.
func (n *Node) DecideSleep(idle time.Duration) (bool, time.Duration) {
	n.idleMu.Lock()
	defer n.idleMu.Unlock()
	since := time.Since(time.Unix(0, n.LastObserved.Load()))
	// A recorded node stays awake: asleep, tmux sends us none of its output.
	if n.Asleep.Load() || n.Observers.Load() != 0 || since < idle || n.Rec.Load() != nil {
		return false, since
	}
	n.Asleep.Store(true)
	return true, since
}

// sleep stops tmux sending the pane's output to us and releases the
// emulator, after decideSleep marked the node asleep; the published screen
// stays readable. The next observation or reseed wakes the node (output
// back on, then a race-free seed). Only the pump calls it.
func (n *Node) sleep() {
	if n.hooks().Sleeping != nil {
		n.hooks().Sleeping(n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.Client.Pause(ctx, n.Pane); err != nil {
		n.Log.Debug("cannot pause the pane's output", "err", err)
		n.Asleep.Store(false)
		return
	}
	n.Scr.Sleep()
	n.stale = false
	n.Log.Debug("node asleep: nobody observes it")
}

// Observe marks the node observed now and, if it sleeps, wakes it and
// waits until its mirror is fresh again.
func (n *Node) Observe(ctx context.Context) {
	n.idleMu.Lock()
	n.LastObserved.Store(time.Now().UnixNano())
	asleep := n.Asleep.Load()
	n.idleMu.Unlock()
	if !asleep {
		return
	}
	done := make(chan struct{})
	select {
	case n.wakeReq <- done:
	case <-n.Done:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-done:
	case <-n.Done:
	case <-ctx.Done():
	}
}
