package node

import (
	"context"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// EarlyExit watches a new node for up to d: if its program exits in that
// time, the launch says so with the last screen lines. It returns early,
// with nil, once the program has printed and then gone quiet for
// launchQuiet and is still running (it is waiting for input: it
// started). A program that went quiet because it ended is waited for:
// under load its exit can reach the node after the quiet period.
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
			ended := n.programEnded(ctx)
			if n.hooks().LaunchQuiet != nil {
				n.hooks().LaunchQuiet(n, ended)
			}
			if !ended {
				return nil
			}
			// Quiet because it ended: its exit is on its way (tmux
			// confirms it), to be reported within d.
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

// programEnded reports whether the node's local program is known to have
// ended (reaped, or a zombie) although its exit has not been published.
// A host's program (a look is an ssh round trip), or one whose pid is
// unknown, is not checked: the launch then returns as before.
func (n *Node) programEnded(ctx context.Context) bool {
	pid := n.Pid()
	return pid > 0 && !n.Srv.Remote() && n.Srv.PidGone(ctx, pid)
}
