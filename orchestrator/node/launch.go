package node

import (
	"context"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"

	"github.com/termsprawl/termsprawl/tools"
)

// EarlyExit watches a new node for up to d: if its program exits in that
// time, the launch says so with the last screen lines. It returns early,
// with nil, once the program has printed, gone quiet for launchQuiet and
// is found waiting (hosts.ActivityWaiting: asleep, no process of it on a
// timer or running: it waits for input, it started). A program found
// busy then (a shell waiting for its sleep, a process not yet scheduled
// on a loaded machine) is looked at again after another quiet period; one
// found ended is waited for, since under load its exit can reach the node
// after the quiet period. A host's program is not looked at: the launch
// returns at the first quiet period, as a look is an ssh round trip.
func (n *Node) EarlyExit(ctx context.Context, d time.Duration) *tools.EarlyExit {
	if d <= 0 {
		return nil
	}
	if n.hooks().EarlyExit != nil {
		n.hooks().EarlyExit(n)
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	quiet := time.NewTimer(time.Hour)
	defer quiet.Stop()
	tailWait := time.NewTimer(8 * deadReseed) // past the last dead-pane seed
	defer tailWait.Stop()
	for {
		rev, changed := n.Scr.WaitState()
		status, statusCh := n.statusWait()
		if status == tools.StatusExited {
			if len(n.excerpt(1)) == 0 && tailWait != nil {
				// Dead before its last output reached the mirror: the
				// second seed brings it (see deadReseed).
				select {
				case <-changed:
				case <-tailWait.C:
					tailWait = nil
				case <-ctx.Done():
					tailWait = nil
				}
				continue
			}
			_, code, _ := n.State()
			e := &tools.EarlyExit{ScreenTail: n.excerpt(10)}
			if code != nil {
				e.ExitCode = *code
			}
			return e
		}
		if rev > RevisionBase(n.Meta.Epoch) {
			quiet.Reset(launchQuiet)
		}
		select {
		case <-changed:
		case <-statusCh:
		case <-quiet.C:
			a := n.Srv.Activity(ctx, n.Pid())
			if n.hooks().LaunchQuiet != nil {
				n.hooks().LaunchQuiet(n, a)
			}
			switch a {
			case hosts.ActivityEnded:
				// Quiet because it ended: its exit is on its way (tmux
				// confirms it), to be reported within d.
			case hosts.ActivityBusy:
				quiet.Reset(launchQuiet)
			default:
				return nil
			}
		case <-deadline.C:
			return nil
		case <-n.Closing:
			return nil
		case <-n.Env.Stopping():
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// launchQuiet is how long a new program that printed must stay quiet for
// its launch to stop watching for an early exit.
const launchQuiet = 250 * time.Millisecond
