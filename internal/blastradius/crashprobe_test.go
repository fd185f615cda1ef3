package blastradius

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// TestCrashProbe drives tmux the way termsprawl does and counts how often
// the tmux server dies. Each scenario is run TERMSPRAWL_CRASH_RUNS times
// (default 5) on a fresh server; TERMSPRAWL_CRASH_SCENARIO selects
// scenarios by name (comma-separated, default all). A line per scenario
// says "crashed K of N runs" and how each crash looked (the kernel's
// segfault line, or a plain exit: tmux's fatalx exits with status 1).
func TestCrashProbe(t *testing.T) {
	if os.Getenv("TERMSPRAWL_CRASH_PROBE") != "1" {
		t.Skip("set TERMSPRAWL_CRASH_PROBE=1 to run the tmux crash probes (minutes, many tmux processes)")
	}
	runs := envInt("TERMSPRAWL_CRASH_RUNS", 5)
	want := map[string]bool{}
	for _, s := range strings.Split(os.Getenv("TERMSPRAWL_CRASH_SCENARIO"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			want[s] = true
		}
	}
	for _, sc := range scenarios() {
		if len(want) > 0 && !want[sc.name] {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			crashes := 0
			var how []string
			for i := 0; i < runs; i++ {
				dead, sig := runScenario(t, sc)
				if dead {
					crashes++
					how = append(how, sig)
				}
			}
			t.Logf("%s: crashed %d of %d runs (%s)", sc.name, crashes, runs, sc.about)
			for _, h := range how {
				t.Logf("  %s", h)
			}
		})
	}
}

type scenario struct {
	name  string
	about string
	run   func(ctx context.Context, p *probe) error
}

// probe is one fresh server with termsprawl's admin and waiter clients.
type probe struct {
	t     testing.TB
	srv   *server
	admin *ctl
	seq   int
}

type node struct {
	name string
	c    *ctl
	pane string
	pid  int
}

func runScenario(t *testing.T, sc scenario) (dead bool, how string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := newServer(t)
	if err := srv.start(ctx); err != nil {
		t.Fatalf("start server: %v", err)
	}
	defer srv.kill()
	gdbOut := watchWithGdb(t, srv.pid)
	admin, err := srv.attach(ctx, adminSession)
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	waiter, err := srv.attach(ctx, adminSession)
	if err != nil {
		t.Fatalf("waiter client: %v", err)
	}
	go func() { // termsprawl parks a client on the pane-death channel
		for ctx.Err() == nil {
			if _, err := waiter.run(ctx, "wait-for termsprawl-pane-died"); err == errClosed {
				return
			}
		}
	}()
	p := &probe{t: t, srv: srv, admin: admin}
	err = sc.run(ctx, p)
	time.Sleep(300 * time.Millisecond) // let a dying server finish dying
	if srv.alive() {
		if err != nil {
			t.Logf("%s: server alive, scenario error: %v", sc.name, err)
		}
		return false, ""
	}
	how = fmt.Sprintf("server %d ended without a kernel segfault line (fatalx or abort); scenario said: %v", srv.pid, err)
	if lines := segfaults(srv.pid); len(lines) > 0 {
		how = lines[len(lines)-1]
	}
	if gdbOut != "" {
		time.Sleep(2 * time.Second) // gdb prints the backtrace and detaches
		how += "\n" + gdbBacktrace(gdbOut)
	}
	return true, how
}

// watchWithGdb attaches gdb to the server when TERMSPRAWL_CRASH_GDB=1 and
// returns the file its output goes to: on a signal, exit or abort it
// prints a backtrace (with a tmux built with symbols, function and line).
func watchWithGdb(t *testing.T, pid int) string {
	if os.Getenv("TERMSPRAWL_CRASH_GDB") != "1" {
		return ""
	}
	out := filepath.Join(t.TempDir(), fmt.Sprintf("gdb-%d.txt", pid))
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("gdb", "-p", strconv.Itoa(pid), "-batch", "-nx",
		"-ex", "handle SIGPIPE nostop noprint pass", "-ex", "handle SIGCHLD nostop noprint pass",
		"-ex", "handle SIGUSR1 nostop noprint pass", "-ex", "handle SIGUSR2 nostop noprint pass",
		"-ex", "break exit", "-ex", "break abort", "-ex", "continue", "-ex", "bt 12")
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); f.Close() }()
	time.Sleep(time.Second) // attached and continued
	return out
}

// gdbBacktrace returns the stack frames gdb printed.
func gdbBacktrace(path string) string {
	b, _ := os.ReadFile(path)
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "#") || strings.Contains(l, "received signal") || strings.HasPrefix(l, "Thread") && strings.Contains(l, "hit Breakpoint") {
			keep = append(keep, "    "+l)
		}
	}
	return strings.Join(keep, "\n")
}

// launch creates a node the way termsprawl's Launch does: new-session and
// the node option on one line from the admin client, then the node's own
// control client, pause-after, and a seed.
func (p *probe) launch(ctx context.Context, prog string) (*node, error) {
	p.seq++
	name := fmt.Sprintf("ts-n%d", p.seq)
	if _, err := p.admin.run(ctx, fmt.Sprintf("new-session -d -s %s -x 120 -y 40 -- sh -c '%s' ; set-option -t =%s: @termsprawl_node n%d", name, prog, name, p.seq)); err != nil {
		return nil, err
	}
	c, err := p.srv.attach(ctx, name)
	if err != nil {
		return nil, err
	}
	return p.adopt(ctx, name, c)
}

// adopt finishes a node whose control client is attached.
func (p *probe) adopt(ctx context.Context, name string, c *ctl) (*node, error) {
	out, err := c.run(ctx, "display-message -p -t ="+name+": '#{pane_id} #{pane_pid}'")
	if err != nil || len(out) != 1 {
		return nil, fmt.Errorf("find pane of %s: %v %q", name, err, out)
	}
	f := strings.Fields(out[0])
	pid, _ := strconv.Atoi(f[1])
	n := &node{name: name, c: c, pane: f[0], pid: pid}
	if _, err := c.run(ctx, "refresh-client -f pause-after=5"); err != nil {
		return nil, err
	}
	if _, err := c.run(ctx, "display -p -t "+n.pane+" '#{cursor_x} #{cursor_y}' ; capture-pane -p -e -N -t "+n.pane); err != nil {
		return nil, err
	}
	return n, nil
}

// The ways of closing a node that the probes compare.

// closeKillAttached is the first CloseNode: kill-session from the admin
// client while the node's control client is still attached.
func (p *probe) closeKillAttached(ctx context.Context, n *node) error {
	_, err := p.admin.run(ctx, "kill-session -t ="+n.name)
	n.c.detach()
	return err
}

// closeCurrent is CloseNode as of commit 02d02ca: remain-on-exit off, the
// pane's output off, detach, wait until the server lists the client no
// more, SIGHUP the program's group, wait for tmux to end the session,
// SIGKILL, kill-session.
func (p *probe) closeCurrent(ctx context.Context, n *node) error {
	return p.closeSignal(ctx, n, true)
}

// closePauseKill pauses the pane's output for the node's client (which
// drops what tmux queued for it), then kill-session from the admin client
// with the node's client still attached; the client leaves with %exit.
func (p *probe) closePauseKill(ctx context.Context, n *node) error {
	if _, err := n.c.run(ctx, "refresh-client -A '"+n.pane+":pause'"); err != nil {
		return err
	}
	_, err := p.admin.run(ctx, "kill-session -t ="+n.name)
	n.c.detach()
	return err
}

// closeNoOff is closeCurrent without `refresh-client -A %P:off`.
func (p *probe) closeNoOff(ctx context.Context, n *node) error {
	return p.closeSignal(ctx, n, false)
}

// closePause is closeCurrent with `refresh-client -A %P:pause` where it
// had `%P:off` (pause drops the client's queued output for the pane; off
// does not in 3.3a).
func (p *probe) closePause(ctx context.Context, n *node) error {
	return p.closeSignalWith(ctx, n, "pause")
}

func (p *probe) closeSignal(ctx context.Context, n *node, paneOff bool) error {
	if paneOff {
		return p.closeSignalWith(ctx, n, "off")
	}
	return p.closeSignalWith(ctx, n, "")
}

// closeSignalWith sends `refresh-client -A %P:state` (if state is not
// empty) before detaching.
func (p *probe) closeSignalWith(ctx context.Context, n *node, state string) error {
	p.debugf("close %s (%s): remain-on-exit off", n.name, state)
	// CloseNode sends this through the node's client, where the reply
	// waits behind the pane's queued output; the pause variant (the
	// proposed sequence) uses the admin client.
	setter := n.c
	if state == "pause" {
		setter = p.admin
	}
	if _, err := setter.run(ctx, "set-option -p -t "+n.pane+" remain-on-exit off"); err != nil {
		return err
	}
	if state != "" {
		if _, err := n.c.run(ctx, "refresh-client -A '"+n.pane+":"+state+"'"); err != nil {
			return err
		}
	}
	cpid := strconv.Itoa(n.c.pid())
	p.debugf("close %s: detach", n.name)
	n.c.detach()
	p.debugf("close %s: wait for the client to go", n.name)
	if err := p.waitGone(ctx, "list-clients -F '#{client_pid}'", cpid, time.Second); err != nil {
		return err
	}
	p.debugf("close %s: signals", n.name)
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGHUP, time.Second}, {syscall.SIGKILL, 5 * time.Second}} {
		syscall.Kill(-n.pid, step.sig)
		syscall.Kill(n.pid, step.sig)
		if p.waitGone(ctx, "list-sessions -F '#{session_name}'", n.name, step.wait) == nil {
			return nil
		}
	}
	_, err := p.admin.run(ctx, "kill-session -t ="+n.name)
	return err
}

// closeDetachKill detaches the node's client, waits until tmux let go of
// it, then kill-session (no signals, no output toggling).
func (p *probe) closeDetachKill(ctx context.Context, n *node) error {
	cpid := strconv.Itoa(n.c.pid())
	n.c.detach()
	if err := p.waitGone(ctx, "list-clients -F '#{client_pid}'", cpid, time.Second); err != nil {
		return err
	}
	_, err := p.admin.run(ctx, "kill-session -t ="+n.name)
	return err
}

// waitGone polls the admin client until line's output has no line equal
// to want, for at most d.
func (p *probe) waitGone(ctx context.Context, line, want string, d time.Duration) error {
	var err error
	if testenv.Until(d, func() bool {
		var out []string
		if out, err = p.admin.run(ctx, line); err != nil {
			return true
		}
		for _, l := range out {
			if strings.TrimSpace(l) == want {
				return false
			}
		}
		return true
	}) {
		return err
	}
	return fmt.Errorf("%q still lists %s after %v", line, want, d)
}

func (p *probe) debugf(format string, args ...any) {
	if os.Getenv("TERMSPRAWL_CRASH_DEBUG") == "1" {
		p.t.Logf("%s "+format, append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	}
}

func floodProg() string {
	return fmt.Sprintf("yes | head -c %d; exec sleep 1000", envInt("TERMSPRAWL_CRASH_FLOOD_BYTES", 20000000))
}

// rateProg prints about 1,000 numbered lines a second, forever.
const rateProg = `i=0; while :; do seq $i $((i+99)); i=$((i+100)); sleep 0.1; done`

// floodThenClose launches nodes that each flood, then closes them one by
// one with closeFn while the others still flood.
func floodThenClose(closeFn func(*probe, context.Context, *node) error) func(context.Context, *probe) error {
	return func(ctx context.Context, p *probe) error {
		var nodes []*node
		for i := 0; i < envInt("TERMSPRAWL_CRASH_NODES", 10); i++ {
			n, err := p.launch(ctx, floodProg())
			if err != nil {
				return err
			}
			nodes = append(nodes, n)
		}
		time.Sleep(300 * time.Millisecond)
		for _, n := range nodes {
			if err := closeFn(p, ctx, n); err != nil {
				return err
			}
		}
		return nil
	}
}

// rateThenClose closes, one after another, nodes printing ~1,000 lines/s
// (a fresh one each time) beside nine idle nodes.
func rateThenClose(closeFn func(*probe, context.Context, *node) error) func(context.Context, *probe) error {
	return func(ctx context.Context, p *probe) error {
		for i := 0; i < 9; i++ {
			if _, err := p.launch(ctx, "exec sleep 1000"); err != nil {
				return err
			}
		}
		for i := 0; i < 10; i++ {
			n, err := p.launch(ctx, rateProg)
			if err != nil {
				return err
			}
			time.Sleep(500 * time.Millisecond)
			if err := closeFn(p, ctx, n); err != nil {
				return err
			}
		}
		return nil
	}
}

// launchKill creates and destroys sessions in a loop while control clients
// are still starting for them (racy) or only after each client's attach
// was answered (serial).
func launchKill(racy bool) func(context.Context, *probe) error {
	return func(ctx context.Context, p *probe) error {
		var wg sync.WaitGroup
		defer wg.Wait()
		for i := 0; i < envInt("TERMSPRAWL_CRASH_LOOPS", 40); i++ {
			p.seq++
			name := fmt.Sprintf("ts-k%d", p.seq)
			if _, err := p.admin.run(ctx, "new-session -d -s "+name+" -x 120 -y 40 -- sh -c 'exec sleep 1000'"); err != nil {
				return err
			}
			c, err := p.srv.startCtl(name)
			if err != nil {
				return err
			}
			if racy {
				// termsprawl before lifecycleMu: the next launch or
				// close happens while this client is identifying.
				wg.Add(1)
				go func() {
					defer wg.Done()
					c.waitStarted(ctx)
					c.detach()
				}()
				if _, err := p.admin.run(ctx, "kill-session -t ="+name); err != nil {
					return err
				}
				continue
			}
			if err := c.waitStarted(ctx); err != nil {
				return err
			}
			cpid := strconv.Itoa(c.pid())
			c.detach()
			if err := p.waitGone(ctx, "list-clients -F '#{client_pid}'", cpid, time.Second); err != nil {
				return err
			}
			if _, err := p.admin.run(ctx, "kill-session -t ="+name); err != nil {
				return err
			}
		}
		return nil
	}
}

// sleepWake toggles a flooding pane's output off and on, as termsprawl's
// idle sleep and wake do (refresh-client -A %P:off, later %P:on), or with
// pause and continue instead.
func sleepWake(sleep, wake string) func(context.Context, *probe) error {
	return func(ctx context.Context, p *probe) error { return sleepWakeWith(ctx, p, sleep, wake) }
}

func sleepWakeWith(ctx context.Context, p *probe, sleep, wake string) error {
	var nodes []*node
	for i := 0; i < envInt("TERMSPRAWL_CRASH_NODES", 10); i++ {
		n, err := p.launch(ctx, floodProg())
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	for round := 0; round < 20; round++ {
		for _, n := range nodes {
			if _, err := n.c.run(ctx, "refresh-client -A '"+n.pane+":"+sleep+"'"); err != nil {
				return err
			}
		}
		time.Sleep(50 * time.Millisecond)
		for _, n := range nodes {
			if _, err := n.c.run(ctx, "refresh-client -A '"+n.pane+":"+wake+"'"); err != nil {
				return err
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func scenarios() []scenario {
	return []scenario{
		{"flood-kill-attached", "10 nodes flooding; kill-session with the node's client attached", floodThenClose((*probe).closeKillAttached)},
		{"flood-close-current", "10 nodes flooding; CloseNode as of 02d02ca (pane off, detach, SIGHUP)", floodThenClose((*probe).closeCurrent)},
		{"flood-close-nooff", "10 nodes flooding; as CloseNode without refresh-client -A %P:off", floodThenClose((*probe).closeNoOff)},
		{"flood-detach-kill", "10 nodes flooding; detach, wait, kill-session", floodThenClose((*probe).closeDetachKill)},
		{"rate-kill-attached", "~1,000 lines/s node; kill-session with its client attached", rateThenClose((*probe).closeKillAttached)},
		{"rate-close-current", "~1,000 lines/s node; CloseNode as of 02d02ca", rateThenClose((*probe).closeCurrent)},
		{"rate-detach-kill", "~1,000 lines/s node; detach, wait, kill-session", rateThenClose((*probe).closeDetachKill)},
		{"launch-kill-racy", "new-session + control client starting + kill-session, not waiting for the attach", launchKill(true)},
		{"launch-kill-serial", "new-session, attach answered, detach, wait, kill-session", launchKill(false)},
		{"flood-close-pause", "10 nodes flooding; CloseNode with %P:pause instead of %P:off", floodThenClose((*probe).closePause)},
		{"flood-pause-kill", "10 nodes flooding; %P:pause, then kill-session with the client attached", floodThenClose((*probe).closePauseKill)},
		{"rate-pause-kill", "~1,000 lines/s node; %P:pause, then kill-session with the client attached", rateThenClose((*probe).closePauseKill)},
		{"rate-close-pause", "~1,000 lines/s node; CloseNode with %P:pause instead of %P:off", rateThenClose((*probe).closePause)},
		{"flood-sleep-wake", "10 nodes flooding; refresh-client -A %P:off/on toggles (idle sleep, wake)", sleepWake("off", "on")},
		{"flood-pause-continue", "10 nodes flooding; refresh-client -A %P:pause/continue toggles", sleepWake("pause", "continue")},
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
