package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/sshtest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator/proc"
	"github.com/termsprawl/termsprawl/tools"
)

// hostInfo is host_list's row of name.
func hostInfo(t *testing.T, o *Orchestrator, name string) tools.HostInfo {
	t.Helper()
	for _, h := range o.HostList(tctx(t)) {
		if h.Name == name {
			return h
		}
	}
	t.Fatalf("no host %s in %+v", name, o.HostList(tctx(t)))
	return tools.HostInfo{}
}

// waitHostState waits until host_list says state for name.
func waitHostState(t *testing.T, o *Orchestrator, name, state string, within time.Duration) tools.HostInfo {
	t.Helper()
	var h tools.HostInfo
	if !testenv.Until(within, func() bool { h = hostInfo(t, o, name); return h.State == state }) {
		t.Fatalf("host %s: state %s, want %s within %v: %+v", name, h.State, state, within, h)
	}
	return h
}

// host_list through a cut link: connected → unreachable → reconnecting
// (an attempt held in the hook) → connected; nodes counted, a round trip
// while connected, since moving with each state.
func TestRemoteHostStates(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 10 s on a loaded 2-core machine")
	t.Parallel()
	hold, held := make(chan struct{}), make(chan struct{}, 1)
	var holding atomic.Bool
	o, f, _, _ := newRemoteHooks(t, &hooks{hostConnect: func(string) {
		if holding.Load() {
			held <- struct{}{}
			<-hold
		}
	}}, "big="+sshtest.Good)
	id := remoteLaunch(t, o, "big", tickArgv...)
	waitText(t, o, id, "tick 2")
	h := hostInfo(t, o, "big")
	if h.State != tools.HostStateConnected || h.Nodes != 1 || h.RoundTripMS == nil || *h.RoundTripMS <= 0 || h.Dest != sshtest.Good || h.Since.IsZero() || h.Socket != f.RemoteSocket {
		t.Fatalf("connected host: %+v", h)
	}
	since0 := h.Since
	// The link is cut: no packet reaches the host, and the master is
	// ended as ssh's keepalive would end it (without waiting its ~10 s).
	f.Block()
	if p, err := os.FindProcess(hostStatus(o, "big").MasterPID); err == nil {
		p.Kill()
	}
	h = waitHostState(t, o, "big", tools.HostStateUnreachable, 20*time.Second)
	if h.RoundTripMS != nil || h.Nodes != 1 || !h.Since.After(since0) || h.Error == "" {
		t.Fatalf("unreachable host: %+v", h)
	}
	// The next attempt is held at its start, then the link is back:
	// reconnecting. (Unblocking first let an attempt already past the
	// hold connect, and no attempt was ever held.) Attempts are one at a
	// time, so none is under way beside the held one.
	holding.Store(true)
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("no reconnect attempt")
	}
	f.Unblock()
	if h = hostInfo(t, o, "big"); h.State != tools.HostStateReconnecting {
		t.Fatalf("while an attempt is under way: %+v", h)
	}
	holding.Store(false)
	close(hold)
	h = waitHostState(t, o, "big", tools.HostStateConnected, 20*time.Second)
	if h.RoundTripMS == nil || h.Reconnects < 1 {
		t.Fatalf("reconnected host: %+v", h)
	}
	// The node is mirrored again once the reconnect's adoption ran.
	if !testenv.Until(20*time.Second, func() bool {
		l := o.List(tctx(t))
		return len(l) == 1 && l[0].Status == tools.StatusRunning
	}) {
		t.Fatalf("the node after the reconnect: %+v", o.List(tctx(t)))
	}
	waitText(t, o, id, "tick "+strconv.Itoa(lastTick(t, f, id)+2))
}

// hosts rm: refused while the host has live nodes; with close_nodes they
// are closed (ended on the host) and the host is gone from hosts.json;
// a host that cannot be reached has its nodes forgotten, said so.
func TestRemoteHostRemove(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 8 s on a loaded 2-core machine")
	t.Parallel()
	f := sshtest.New(t)
	srv := tmuxtest.New(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	gone := hostSpec(f, "gone", sshtest.Good)
	gone.Socket = f.RemoteSocket + "-g" // a server of its own
	f.Track(gone.Socket)
	specs := []tools.HostSpec{hostSpec(f, "big", sshtest.Good), gone}
	if err := tools.WriteHosts(dir, specs); err != nil {
		t.Fatal(err)
	}
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.Hosts = specs })
	id := remoteLaunch(t, o, "big", tickArgv...)
	_, err := o.RemoveHost(tctx(t), "big", false)
	var te *tools.Error
	if !errors.As(err, &te) || te.Kind != tools.KindRejected || !strings.Contains(te.Msg, id) || !strings.Contains(te.Msg, "--close-nodes") {
		t.Fatalf("rm with a live node: %v", err)
	}
	if _, err := o.Snapshot(context.Background(), id); err != nil {
		t.Fatalf("the node after a refused rm: %v", err)
	}
	r, err := o.RemoveHost(tctx(t), "big", true)
	if err != nil || len(r.Closed) != 1 || r.Closed[0] != id || len(r.Forgotten) != 0 {
		t.Fatalf("rm --close-nodes: %+v %v", r, err)
	}
	if out, err := f.Tmux("has-session", "-t", "=ts-"+id); err == nil {
		t.Fatalf("the remote session outlived the rm: %s", out)
	}
	specs, _ = tools.ReadHosts(dir)
	if len(specs) != 1 || specs[0].Name != "gone" {
		t.Fatalf("hosts.json after rm: %+v", specs)
	}
	if l := o.HostList(tctx(t)); len(l) != 1 || l[0].Name != "gone" {
		t.Fatalf("host_list after rm: %+v", l)
	}
	// A host gone for good: its node is forgotten, not ended, said so.
	id2 := remoteLaunch(t, o, "gone", tickArgv...)
	f.Block()
	if p, err := os.FindProcess(hostStatus(o, "gone").MasterPID); err == nil {
		p.Kill()
	}
	waitHostState(t, o, "gone", tools.HostStateUnreachable, 20*time.Second)
	r, err = o.RemoveHost(tctx(t), "gone", true)
	if err != nil || len(r.Forgotten) != 1 || r.Forgotten[0] != id2 || !strings.Contains(r.Note, "may still run there") {
		t.Fatalf("rm of an unreachable host: %+v %v", r, err)
	}
	if l := o.List(tctx(t)); len(l) != 0 {
		t.Fatalf("nodes after the rm: %+v", l)
	}
	if _, err := os.Stat(o.metaPath(id2)); !os.IsNotExist(err) {
		t.Fatalf("metadata of the forgotten node: %v", err)
	}
	if _, err := o.RemoveHost(tctx(t), "gone", true); err == nil {
		t.Fatal("a second rm of the same host was not refused")
	}
}

// A host whose pane list hangs after a death never delays the exit of a
// program on this machine (CONTRACT §23): with the process watcher off,
// a round of pane lists (what tmux's pane-died hook asks for) is the only
// way here, and it does not wait for the host. The test asks for the
// round itself once the program is dead: tmux 3.3a sometimes fires no
// pane-died hook at all (proc's doc), which made a test that waited for
// the hook fail about one run in four under load.
func TestRemoteHungHostDelaysNoLocalExit(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 7 s on a loaded 2-core machine")
	t.Parallel()
	o, _, _, _ := newRemote(t, "big="+sshtest.Good)
	remoteLaunch(t, o, "big", tickArgv...)
	o.procs = nil // only the pane-died hook tells (deaths.go)
	release := make(chan struct{})
	var hung atomic.Int32
	o.hooks.listPanes = func(s *tmuxServer) {
		if s.Remote() {
			hung.Add(1)
			<-release
		}
	}
	t.Cleanup(func() { close(release) })
	// It ends by a signal, printing nothing: no quiet-time check (heal)
	// looks at it either.
	info, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"sleep", "600"}, Cwd: t.TempDir(), Columns: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	o.deaths <- struct{}{} // a round that finds the host's list stuck
	testenv.Eventually(t, 20*time.Second, func() bool { return hung.Load() != 0 }, testenv.Msg("the host's list never hung"))
	start := time.Now()
	sig, err := o.Signal(info.Terminal, "TERM")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Until(20*time.Second, func() bool {
		if syscall.Kill(sig.PID, 0) != nil {
			return true
		}
		_, zombie := proc.ZombieStatus(sig.PID)
		return zombie
	})
	o.deaths <- struct{}{}                                                                                // the round the pane-died hook asks for
	res, err := o.WaitFor(tctx(t), info.Terminal, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 15000}) // the host list hangs until cleanup
	if err != nil || !res.Matched {
		t.Fatalf("the local exit while the host's pane list hangs: %+v %v (after %v)", res, err, time.Since(start))
	}
	if snap, _ := o.Snapshot(context.Background(), info.Terminal); snap.ExitCode == nil || *snap.ExitCode != 128+15 {
		t.Fatalf("exit code %v, want 143", snap.ExitCode)
	}
}
