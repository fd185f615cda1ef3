package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/internal/sshtest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// A close issued while the node's host is unreachable never forgets a
// program that still runs there (CONTRACT §31): the close answers
// unavailable saying the node stays listed as closing until the host
// confirms; terminal_list shows both nodes as closing (the programs keep
// running on the host); when the host is back the closes finish there
// and the nodes go.
func TestRemoteCloseDuringOutage(t *testing.T) {
	t.Parallel()
	o, f, _, _ := newRemote(t, "big="+sshtest.Good)
	ids := []string{remoteLaunch(t, o, "big", tickArgv...), remoteLaunch(t, o, "big", tickArgv...)}
	for _, id := range ids {
		waitText(t, o, id, "tick 2")
	}
	f.Block()
	if p, err := os.FindProcess(hostStatus(o, "big").MasterPID); err == nil {
		p.Kill() // only the ssh master this orchestrator started
	}
	waitHostState(t, o, "big", tools.HostStateUnreachable, 20*time.Second)
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := o.CloseNode(ctx, id)
		cancel()
		var te *tools.Error
		if !errors.As(err, &te) || te.Kind != tools.KindUnavailable || !errors.Is(err, ErrHostUnreachable) ||
			!strings.Contains(te.Msg, "closing") || te.Details["closing"] != true {
			t.Fatalf("close %s while unreachable: %v", id, err)
		}
	}
	l := o.List(tctx(t))
	if len(l) != 2 || l[0].Status != tools.StatusClosing || l[1].Status != tools.StatusClosing {
		t.Fatalf("list after the closes: %+v", l)
	}
	for _, id := range ids {
		if out, err := f.Tmux("has-session", "-t", "=ts-"+id); err != nil {
			t.Fatalf("the program of %s did not keep running: %v %s", id, err, out)
		}
	}
	// A second close while unreachable answers the same, and the node
	// stays listed.
	if err := o.CloseNode(tctx(t), ids[0]); !errors.Is(err, ErrHostUnreachable) {
		t.Fatalf("a second close while unreachable: %v", err)
	}
	f.Unblock()
	alive := 0
	testenv.Eventually(t, 60*time.Second, func() bool {
		l = o.List(tctx(t))
		alive = 0
		for _, id := range ids {
			if _, err := f.Tmux("has-session", "-t", "=ts-"+id); err == nil {
				alive++
			}
		}
		if len(l) == 0 && alive == 0 {
			return true
		}
		for _, n := range l {
			if n.Status != tools.StatusClosing || !slices.Contains(ids, n.Terminal) {
				t.Fatalf("while the closes finish: %+v", l)
			}
		}
		return false
	}, func() string {
		return fmt.Sprintf("60 s after the host came back: listed %+v, %d sessions alive on the host", l, alive)
	})
}

// The host goes away half-way through a close (after the mirror was
// detached, before the program was ended): the node is not forgotten but
// listed as closing, and the close finishes when the host is back.
func TestRemoteCloseLosesTheHost(t *testing.T) {
	t.Parallel()
	o, f, _, _ := newRemote(t, "big="+sshtest.Good)
	id := remoteLaunch(t, o, "big", tickArgv...)
	waitText(t, o, id, "tick 2")
	master := hostStatus(o, "big").MasterPID
	o.hooks.closed = func(n *node.Node) {
		if n.Meta.ID != id {
			return
		}
		f.Block()
		if p, err := os.FindProcess(master); err == nil {
			p.Kill() // only the ssh master this orchestrator started
		}
	}
	t.Cleanup(func() { o.hooks.closed = nil })
	err := o.CloseNode(tctx(t), id)
	o.hooks.closed = nil
	var te *tools.Error
	if !errors.As(err, &te) || !errors.Is(err, ErrHostUnreachable) || te.Details["closing"] != true {
		t.Fatalf("a close that lost its host: %v", err)
	}
	if l := o.List(tctx(t)); len(l) != 1 || l[0].Terminal != id || l[0].Status != tools.StatusClosing {
		t.Fatalf("list: %+v", l)
	}
	if _, err := f.Tmux("has-session", "-t", "=ts-"+id); err != nil {
		t.Fatalf("the program did not keep running: %v", err)
	}
	f.Unblock()
	testenv.Eventually(t, 60*time.Second, func() bool {
		_, err := f.Tmux("has-session", "-t", "=ts-"+id)
		return len(o.List(tctx(t))) == 0 && err != nil
	}, func() string { return fmt.Sprintf("60 s after the host came back: %+v", o.List(tctx(t))) })
}

// hosts rm --close-nodes of 64 nodes whose programs ignore the hang-up
// (each needs its SIGKILL after closeGrace) closes them in parallel,
// bounded (issue 41: 64 in a row timed out at 45 s; the target is 30 s,
// logged here, not asserted).
func TestRemoteHostRemove64(t *testing.T) {
	if testing.Short() {
		t.Skip("launches 64 remote nodes")
	}
	t.Parallel()
	o, f, _, _ := newRemote(t, "big="+sshtest.Good)
	ids := make([]string, remoteNodes)
	errs := make([]error, remoteNodes)
	var wg sync.WaitGroup
	for i := range remoteNodes {
		wg.Go(func() {
			info, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"sh", "-c", `trap '' HUP; echo ready; exec sleep 600`}, Host: "big", Columns: 80, Rows: 24})
			ids[i], errs[i] = info.Terminal, err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("launch %d: %v", i, err)
		}
	}
	start := time.Now()
	r, err := o.RemoveHost(tctx(t), "big", true)
	took := time.Since(start)
	if err != nil || len(r.Closed) != remoteNodes || len(r.Forgotten) != 0 {
		t.Fatalf("rm --close-nodes: %d closed, %d forgotten, %v", len(r.Closed), len(r.Forgotten), err)
	}
	t.Logf("hosts rm --close-nodes of %d nodes answered in %v", remoteNodes, took.Round(time.Millisecond))
	if out, err := f.Tmux("list-sessions", "-F", "#{session_name}"); err == nil && strings.Contains(out, "ts-") {
		t.Fatalf("sessions outlived the rm: %s", out)
	}
}
