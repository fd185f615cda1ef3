package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/internal/sshtest"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/proc"
	"github.com/termsprawl/termsprawl/tools"
	"go.uber.org/goleak"
)

// Tests of the engine's lifecycle without a global lock (CONTRACT §24):
// closes that finish, launches that do not queue, servers that do not
// stall each other, and nothing that outlives Close.

// stayArgv prints and stays: the program of the launch tests.
func stayArgv() []string { return []string{"sh", "-c", "echo up; exec cat"} }

// processExists reports whether pid names a running process (not one
// that ended: gone, or a zombie its parent has not reaped yet).
func processExists(pid int) bool {
	if pid <= 0 || errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return false
	}
	_, zombie := proc.ZombieWait(pid)
	return !zombie
}

// A close whose request is cancelled 20 ms in still ends the program —
// one that ignores SIGHUP — and its session before the node is
// forgotten, every time.
func TestCloseCancelledEndsProgram(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	type goneAt struct {
		id      string
		alive   bool
		session bool
	}
	pids := sync.Map{}
	gone := make(chan goneAt, 16)
	o.OnGone(func(m NodeMeta) {
		p, _ := pids.Load(m.ID)
		pid, _ := p.(int)
		_, err := srv.Cmd("has-session", "-t", "=ts-"+m.ID)
		gone <- goneAt{id: m.ID, alive: processExists(pid), session: err == nil}
	})
	for i := range 10 {
		id := launch(t, o, "sh", "-c", "trap '' HUP; echo up; exec sleep 600")
		waitText(t, o, id, "up")
		n := o.node(id)
		pid := n.Pid()
		if pid <= 0 {
			t.Fatalf("round %d: no pid for %s", i, id)
		}
		pids.Store(id, pid)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		err := o.CloseNode(ctx, id)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("round %d: close: %v", i, err)
		}
		g := within(t, gone, 20*time.Second, "the node being forgotten")
		if g.id != id || g.alive || g.session {
			t.Fatalf("round %d: %s forgotten with its program alive=%v (pid %d), session alive=%v", i, g.id, g.alive, pid, g.session)
		}
		if processExists(pid) {
			t.Fatalf("round %d: pid %d of %s runs after the close", i, pid, id)
		}
	}
}

// The early-exit watch runs outside every lock: while one launch is held
// inside its watch, a second launch on the same server completes.
func TestLaunchWatchOutsideLock(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	holding, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	o.hooks.EarlyExit = func(n *node.Node) {
		if first.CompareAndSwap(false, true) { // only the first launch
			close(holding)
			<-release
		}
	}
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(func() { free(); o.hooks.EarlyExit = nil })

	firstDone := make(chan error, 1)
	go func() {
		_, err := o.Launch(tctx(t), LaunchSpec{Command: stayArgv(), Cwd: t.TempDir()})
		firstDone <- err
	}()
	within(t, holding, 20*time.Second, "the first launch entering its early-exit watch")
	second := make(chan error, 1)
	go func() {
		_, err := o.Launch(tctx(t), LaunchSpec{Command: stayArgv(), Cwd: t.TempDir()})
		second <- err
	}()
	if err := within(t, second, 20*time.Second, "the second launch while the first watches"); err != nil {
		t.Fatal(err)
	}
	free()
	if err := within(t, firstDone, 20*time.Second, "the first launch"); err != nil {
		t.Fatal(err)
	}
}

// blockedTarget is a launch target whose server is another tmux server
// (a stand-in for a host) and whose far-side file writes block until
// gate closes: an ssh round trip to a host that does not answer.
type blockedTarget struct {
	localTarget
	srv     *tmuxServer
	gate    chan struct{}
	reached chan struct{}
	once    sync.Once
}

func (t *blockedTarget) server(ctx context.Context, r *reservation) (hosts.Server, error) {
	return t.srv, nil
}

func (t *blockedTarget) writeFiles(ctx context.Context, id string) error {
	t.once.Do(func() { close(t.reached) })
	select {
	case <-t.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A local launch and a local close are not held up while a launch on
// another server is stuck in a round trip under that server's lock, nor
// while a close on it is stuck.
func TestLocalLaunchWhileServerBlocked(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	other := tmuxtest.New(t)
	slow, err := o.shards.Add(tctx(t), other.Socket)
	if err != nil {
		t.Fatal(err)
	}
	bt := &blockedTarget{localTarget: localTarget{o}, srv: slow, gate: make(chan struct{}), reached: make(chan struct{})}
	var gateOnce sync.Once
	open := func() { gateOnce.Do(func() { close(bt.gate) }) }
	o.hooks.target = func(_ *Orchestrator, spec LaunchSpec) launchTarget {
		if spec.Name == "far" {
			return bt
		}
		return nil
	}
	t.Cleanup(func() { open(); o.hooks.target = nil })
	keep := launch(t, o, stayArgv()...)

	far := make(chan error, 1)
	go func() {
		_, err := o.Launch(tctx(t), LaunchSpec{Name: "far", Command: stayArgv(), Cwd: t.TempDir()})
		far <- err
	}()
	within(t, bt.reached, 20*time.Second, "the far launch reaching its blocked round trip")
	id := launch(t, o, stayArgv()...)
	if o.node(id).Srv == slow {
		t.Fatalf("the local launch went to the blocked server")
	}
	if err := o.CloseNode(tctx(t), id); err != nil {
		t.Fatalf("local close while another server is blocked: %v", err)
	}
	open()
	if err := within(t, far, 20*time.Second, "the far launch"); err != nil {
		t.Fatal(err)
	}
	farNode := o.node("far")
	if farNode == nil || farNode.Srv != slow {
		t.Fatalf("the far node is not on the blocked server")
	}

	// A close on that server held under its lock: local launches go on.
	holding, release := make(chan struct{}), make(chan struct{})
	o.hooks.closed = func(n *node.Node) {
		if n.Meta.ID == "far" {
			close(holding)
			<-release
		}
	}
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(func() { free(); o.hooks.closed = nil })
	closed := make(chan error, 1)
	go func() { closed <- o.CloseNode(tctx(t), "far") }()
	within(t, holding, 20*time.Second, "the far close holding its server's lock")
	id2 := launch(t, o, stayArgv()...)
	if err := o.CloseNode(tctx(t), id2); err != nil {
		t.Fatalf("local close while another server's close is stuck: %v", err)
	}
	free()
	if err := within(t, closed, 30*time.Second, "the far close"); err != nil {
		t.Fatal(err)
	}
	if err := o.CloseNode(tctx(t), keep); err != nil {
		t.Fatal(err)
	}
}

// A reattach that begins while Close runs is waited for by Close and
// attaches nothing: no control client survives Close.
func TestReattachNotAfterClose(t *testing.T) {
	t.Parallel()
	// The hooks are set before the orchestrator starts the goroutines
	// that read them.
	started, proceed, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var startOnce, finishOnce sync.Once
	h := &hooks{
		reattach: func(*node.Node) {
			startOnce.Do(func() { close(started) })
			<-proceed
		},
		reattached: func(*node.Node) { finishOnce.Do(func() { close(finished) }) },
	}
	var proceedOnce sync.Once
	free := func() { proceedOnce.Do(func() { close(proceed) }) }
	t.Cleanup(func() { free() })
	srv, dir := newTestServer(t)
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.hooks = h })
	id := launch(t, o, stayArgv()...)
	waitText(t, o, id, "up")

	// Someone detaches our control client from outside: a reattach starts.
	detachOurClient(t, srv)
	within(t, started, 20*time.Second, "the reattach starting")
	closed := make(chan struct{})
	go func() {
		o.Close()
		close(closed)
	}()
	select {
	case <-closed:
		// Close did not wait for the reattach under way: it may now
		// attach a client that nobody ends.
	case <-time.After(300 * time.Millisecond):
	}
	free()
	within(t, closed, 30*time.Second, "Close")
	within(t, finished, 30*time.Second, "the reattach ending")
	if pids := controlClients(srv.Socket); len(pids) > 0 {
		t.Fatalf("control clients %v attached after Close", pids)
	}
}

// An adopted session whose mirror cannot attach stays listed (with the
// reason) and can be closed: its program ends.
func TestAdoptAttachFailureListed(t *testing.T) {
	t.Parallel()
	srv, dir := newTestServer(t)
	o := openOrchestrator(t, srv, dir)
	id := launch(t, o, stayArgv()...)
	waitText(t, o, id, "up")
	n := o.node(id)
	pid := n.Pid()
	o.Close()

	o2 := openOrchestratorWith(t, srv, dir, func(c *Config) {
		c.hooks = &hooks{Hooks: node.Hooks{Attach: func(n *node.Node) error {
			if n.Meta.ID == id {
				return errors.New("attach refused by the test")
			}
			return nil
		}}}
	})
	o2.hooks.Attach = nil
	var row *tools.NodeInfo
	for _, r := range o2.List(tctx(t)) {
		if r.Terminal == id {
			row = &r
		}
	}
	if row == nil {
		t.Fatalf("the session whose attach failed is not listed: %+v", o2.List(tctx(t)))
	}
	if !strings.Contains(row.ExitReason, "attach refused by the test") {
		t.Fatalf("its row does not say why: %+v", *row)
	}
	if _, err := o2.Snapshot(context.Background(), id); tools.KindOf(err) != tools.KindUnavailable {
		t.Fatalf("snapshot of an unattached node: %v, want unavailable", err)
	}
	if err := o2.CloseNode(tctx(t), id); err != nil {
		t.Fatalf("close the unattached node: %v", err)
	}
	if processExists(pid) {
		t.Fatalf("its program (pid %d) runs after the close", pid)
	}
	if _, err := srv.Cmd("has-session", "-t", "=ts-"+id); err == nil {
		t.Fatalf("its session exists after the close")
	}
}

// shardClients is how many control clients a shard keeps attached
// whatever its nodes: admin, waiter and the mirror client its nodes share.
const shardClients = 3

// detachOurClient detaches, as a human's `detach-client -s` would, the
// control client that mirrors node id: its shard's mirror client, attached
// to the hidden mirror session (every node of the shard is mirrored again).
func detachOurClient(t *testing.T, srv *tmuxtest.Server) {
	t.Helper()
	srv.Must("detach-client", "-s", "="+hosts.MirrorSession)
}

// tmuxControlChildren lists this process's children that run a tmux
// control client (tmux -C …).
func tmuxControlChildren() []string {
	return children(func(args []string) bool { return slices.Contains(args, "-C") || slices.Contains(args, "-CC") })
}

// tmuxControlChildrenOf is tmuxControlChildren of the tmux servers named
// by sockets and of their shards (SOCKET-2, SOCKET-3, …): the clients of
// one test's servers, countable while other tests run beside it.
func tmuxControlChildrenOf(sockets ...string) []string {
	return children(func(args []string) bool {
		if !slices.Contains(args, "-C") && !slices.Contains(args, "-CC") {
			return false
		}
		i := slices.Index(args, "-L")
		if i < 0 || i+1 >= len(args) {
			return false
		}
		for _, s := range sockets {
			if args[i+1] == s || strings.HasPrefix(args[i+1], s+"-") {
				return true
			}
		}
		return false
	})
}

// sshChildrenOf lists this process's ssh children that use the ssh_config
// config (one sshtest fixture's: every ssh an orchestrator starts for its
// hosts passes the host's -F): one test's, while others run beside it.
func sshChildrenOf(config string) []string {
	return children(func(args []string) bool {
		return len(args) > 0 && filepath.Base(args[0]) == "ssh" && slices.Contains(args, config)
	})
}

// children lists the command lines of this process's children that match.
func children(match func(args []string) bool) []string {
	me := strconv.Itoa(os.Getpid())
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		stat, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != me {
			continue
		}
		cmd, _ := os.ReadFile(d + "/cmdline")
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		if match(args) {
			out = append(out, strings.Join(args, " "))
		}
	}
	return out
}

// No goroutine and no control client of the orchestrator outlives Close.
func TestNothingOutlivesClose(t *testing.T) {
	opts := []goleak.Option{goleak.IgnoreCurrent()}
	srv, dir := newTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := New(ctx, Config{StateDir: dir, Socket: srv.Socket, ShardSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 { // two shards
		info, err := o.Launch(ctx, LaunchSpec{Command: stayArgv(), Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.Terminal)
	}
	waitText(t, o, ids[0], "up")
	if err := o.CloseNode(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	o.Close()
	if kids := tmuxControlChildren(); len(kids) > 0 {
		t.Fatalf("tmux control clients outlive Close: %q", kids)
	}
	goleak.VerifyNone(t, opts...)
	// The sessions themselves keep running for the next orchestrator.
	for _, id := range ids[:2] {
		if _, err := srv.Cmd("has-session", "-t", "=ts-"+id); err != nil {
			t.Fatalf("session of %s ended with Close: %v", id, err)
		}
	}
}

// After a pane death every server's panes are listed at once: while one
// server's list-panes is stuck, another's is asked.
func TestListPanesInParallel(t *testing.T) {
	t.Parallel()
	srv, dir := newTestServer(t)
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.ShardSize = 1 })
	launch(t, o, stayArgv()...)
	launch(t, o, stayArgv()...) // on a second shard
	shards := o.shards.List()
	if len(shards) < 2 {
		t.Fatalf("%d shards, want 2", len(shards))
	}
	other := make(chan struct{})
	var otherOnce sync.Once
	stuck := make(chan bool, 1)
	o.hooks.listPanes = func(s *tmuxServer) {
		if s != shards[0] {
			otherOnce.Do(func() { close(other) })
			return
		}
		select {
		case <-other:
			stuck <- false
		case <-time.After(10 * time.Second):
			stuck <- true
		}
	}
	o.deaths <- struct{}{}
	if within(t, stuck, 20*time.Second, "the first shard's list-panes") {
		t.Fatal("the second shard's list-panes waited for the first's")
	}
}

// A host's pane pid is read on the host: the server's zombie check runs
// through its prefix (ssh), never this machine's /proc.
func TestRemoteZombieReadOnHost(t *testing.T) {
	t.Parallel()
	// The "host" answers every command with the stat line of a zombie
	// that was killed by signal 9; no such process exists here.
	fake := writeScript(t, "fakessh", "#!/bin/sh\necho '4242 (prog x) Z 1 4242 4242 0 -1 4194564 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 9'\n")
	srv := hosts.Remote{Bin: "tmux", Socket: "fake", Prefix: []string{fake, "--"}}.Unconnected()
	const pid = 1 << 22 // beyond any pid of this machine
	if processExists(pid) {
		t.Skip("pid exists here")
	}
	ws, ok := node.ZombieWaitOn(srv, pid)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("zombieWait on the host = %v, %v: want a zombie killed by SIGKILL", ws, ok)
	}
	n := &node.Node{Srv: srv}
	if exited, code := hosts.CheckDead("1::", pid, n.ZombieStatus); !exited || code != 128+9 {
		t.Fatalf("CheckDead on the host = %v, %d: want exited, 137", exited, code)
	}
}

// No ssh process (master, control clients, execs) outlives Close of an
// orchestrator with a host.
func TestNothingOutlivesCloseRemote(t *testing.T) {
	t.Parallel()
	o, f, srv, _ := newRemote(t, "big="+sshtest.Good)
	id := remoteLaunch(t, o, "big", stayArgv()...)
	waitText(t, o, id, "up")
	remoteLaunch(t, o, "big", stayArgv()...)
	if err := o.CloseNode(tctx(t), id); err != nil {
		t.Fatal(err)
	}
	if len(sshChildrenOf(f.Config)) == 0 {
		t.Fatal("no ssh child before Close: the check cannot see them")
	}
	o.Close()
	if kids := sshChildrenOf(f.Config); len(kids) > 0 {
		t.Fatalf("ssh processes outlive Close: %q", kids)
	}
	if kids := tmuxControlChildrenOf(srv.Socket, f.RemoteSocket); len(kids) > 0 {
		t.Fatalf("tmux control clients outlive Close: %q", kids)
	}
}

// Launches at once never exceed MaxNodes: each reserves its slot before
// it creates anything.
func TestMaxNodesUnderConcurrency(t *testing.T) {
	t.Parallel()
	srv, dir := newTestServer(t)
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.MaxNodes = 2 })
	errs := make(chan error, 5)
	for range 5 {
		go func() {
			_, err := o.Launch(tctx(t), LaunchSpec{Command: stayArgv(), Cwd: t.TempDir()})
			errs <- err
		}()
	}
	ok, rejected := 0, 0
	for range 5 {
		switch err := within(t, errs, 30*time.Second, "a launch"); {
		case err == nil:
			ok++
		case tools.KindOf(err) == tools.KindRejected:
			rejected++
		default:
			t.Fatalf("launch: %v", err)
		}
	}
	if ok != 2 || rejected != 3 || len(o.List(tctx(t))) != 2 {
		t.Fatalf("%d launched, %d rejected, %d listed: want 2, 3, 2", ok, rejected, len(o.List(tctx(t))))
	}
}
