package node

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// Input never races the program's start (CONTRACT §18). A program that
// has not shown that it reads — it printed nothing yet, or its output is
// still arriving — gets input the tty echoes at once and the program
// draws again when it starts reading (bash: `echo hi` before its rc file
// ran, then readline redraws `$ echo hi`). Input to such a node is held
// until the program's first output has been quiet for readyQuiet, at most
// readyMax after the launch; the launch says whether that point was
// reached within it (tools.NodeInfo.Ready).
const (
	readyQuiet = 250 * time.Millisecond
	readyMax   = 2 * time.Second
)

// readiness is what a node knows of its program's start: when tmux last
// sent output of the pane, and whether the program was seen ready.
type readiness struct {
	ready      atomic.Bool
	lastOutput atomic.Int64 // unix nanoseconds; 0: no output through the stream yet
}

// output notes that output of the pane arrived (the pump calls it).
func (r *readiness) output() { r.lastOutput.Store(time.Now().UnixNano()) }

// readyBy is when input stops being held for the program's start.
func (n *Node) readyBy() time.Time { return n.Meta.Created.Add(readyMax) }

// waitReady waits until the program has printed and its output has then
// been quiet for readyQuiet, or deadline passes; it reports whether the
// program was ready. It sleeps on the mirror's change channel, the status
// channel and one timer for the quiet period or the deadline. An exited
// or closing node, or ctx's end, stops the wait (not ready).
func (n *Node) waitReady(ctx context.Context, deadline time.Time) bool {
	if n.rd.ready.Load() {
		return true
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		_, changed := n.Scr.WaitState()
		status, statusCh := n.statusWait()
		if status == tools.StatusExited || n.IsClosing() {
			return false
		}
		now := time.Now()
		wake := deadline
		if last, ok := n.lastPrinted(); ok && !n.Stream.Pending() {
			quietAt := last.Add(readyQuiet)
			if !now.Before(quietAt) {
				n.rd.ready.Store(true)
				return true
			}
			wake = minTime(wake, quietAt)
		}
		if !now.Before(deadline) {
			return false
		}
		timer.Reset(wake.Sub(now))
		select {
		case <-changed:
		case <-statusCh:
		case <-timer.C:
		case <-n.Closing:
			return false
		case <-ctx.Done():
			return false
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// lastPrinted returns when the program last printed: the last output
// tmux sent, else — if the screen shows something, printed before the
// mirror attached — the launch.
func (n *Node) lastPrinted() (time.Time, bool) {
	if ns := n.rd.lastOutput.Load(); ns != 0 {
		return time.Unix(0, ns), true
	}
	snap := n.Scr.Snapshot()
	if snap.Cursor.X != 0 || snap.Cursor.Y != 0 {
		return n.Meta.Created, true
	}
	for _, l := range snap.Lines {
		if strings.TrimSpace(l) != "" {
			return n.Meta.Created, true
		}
	}
	return time.Time{}, false
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// LaunchReady is a launch's wait for its program to be ready: up to
// readyMax after the launch when launches watch their program
// (Config.LaunchWatch), else only whether it is ready now.
func (n *Node) LaunchReady(ctx context.Context) *bool {
	deadline := n.readyBy()
	if n.Env.Limits().LaunchWatch < 0 {
		deadline = time.Now()
	}
	ready := n.waitReady(ctx, deadline)
	return &ready
}
