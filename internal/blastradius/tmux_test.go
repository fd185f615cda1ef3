package blastradius

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator"
)

// serverConf is termsprawl's private-server configuration, so the probes
// and measurements run tmux the way termsprawl does.
const serverConf = orchestrator.TmuxServerConf

const adminSession = "termsprawl-admin"

var socketSeq atomic.Int64

// tmuxBin is the tmux under test.
func tmuxBin() string {
	if b := os.Getenv("TERMSPRAWL_TMUX"); b != "" {
		return b
	}
	return "tmux"
}

// minimalEnv is the environment tmux processes get: a few variables, no
// TMUX, so nothing here can reach the user's own server.
func minimalEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8", "TERM=xterm-256color", "SHELL=/bin/sh"}
	for _, k := range []string{"TMUX_TMPDIR", "ASAN_OPTIONS"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// server is one private tmux server.
type server struct {
	t      testing.TB
	bin    string
	socket string
	conf   string
	pid    int

	mu      sync.Mutex
	clients []*ctl
}

// newServer returns a server on a fresh private socket; it is not started
// until start or the first new-session. Cleanup kills it.
func newServer(t testing.TB) *server {
	t.Helper()
	bin := tmuxBin()
	if _, err := exec.LookPath(bin); err != nil {
		testenv.SkipOrFail(t, "tmux binary %q not found (apt-get install tmux)", bin)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(conf, []byte(serverConf), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, bin: bin, conf: conf,
		socket: fmt.Sprintf("blastradius-%d-%d", os.Getpid(), socketSeq.Add(1))}
	t.Cleanup(s.kill)
	return s
}

// cli runs one tmux command as a command-line client.
func (s *server) cli(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, s.bin, append([]string{"-L", s.socket, "-f", s.conf}, args...)...)
	cmd.Env = minimalEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// start starts the server with termsprawl's hidden admin session and
// records the server's pid.
func (s *server) start(ctx context.Context) error {
	if _, err := s.cli(ctx, "new-session", "-d", "-s", adminSession, "-x", "80", "-y", "24", "--", "sleep", "infinity"); err != nil {
		return err
	}
	return s.readPid(ctx)
}

func (s *server) readPid(ctx context.Context) error {
	out, err := s.cli(ctx, "display-message", "-p", "#{pid}")
	if err != nil {
		return err
	}
	s.pid, err = strconv.Atoi(strings.TrimSpace(out))
	return err
}

// alive reports whether the server process still runs.
func (s *server) alive() bool { return pidAlive(s.pid) }

func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) STATE ...: comm may contain spaces; the state follows
	// the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// kill ends this server only: kill-server on its socket, then SIGKILL to
// the pid it reported if it still runs, and removes its socket file.
func (s *server) kill() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	s.cli(ctx, "kill-server")
	cancel()
	if s.alive() {
		syscall.Kill(s.pid, syscall.SIGKILL)
	}
	s.mu.Lock()
	clients := s.clients
	s.clients = nil
	s.mu.Unlock()
	for _, c := range clients {
		c.kill()
	}
	dir := os.Getenv("TMUX_TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	os.Remove(filepath.Join(dir, fmt.Sprintf("tmux-%d", os.Getuid()), s.socket))
}

// ctl is a minimal tmux control-mode client: it frames replies to its own
// commands and discards everything else (%output, notifications). It always
// drains tmux's output (a reader that stops can wedge tmux 3.3a).
type ctl struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu      sync.Mutex
	pending []chan reply
	err     error

	started chan error
	done    chan struct{}
}

type reply struct {
	lines []string
	err   bool
}

var errClosed = errors.New("control client ended")

// attach starts `tmux -C attach-session -t =session` and waits until
// tmux answered the attach (so the client is identified and attached).
func (s *server) attach(ctx context.Context, session string) (*ctl, error) {
	c, err := s.startCtl(session)
	if err != nil {
		return nil, err
	}
	if err := c.waitStarted(ctx); err != nil {
		c.kill()
		return nil, err
	}
	return c, nil
}

// startCtl spawns the control client and returns at once: its identify
// and attach are still under way.
func (s *server) startCtl(session string) (*ctl, error) {
	cmd := exec.Command(s.bin, "-L", s.socket, "-f", s.conf, "-C", "attach-session", "-t", "="+session)
	cmd.Env = minimalEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &ctl{cmd: cmd, stdin: stdin, started: make(chan error, 1), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.clients = append(s.clients, c)
	s.mu.Unlock()
	go c.read(stdout)
	return c, nil
}

func (c *ctl) waitStarted(ctx context.Context) error {
	select {
	case err := <-c.started:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *ctl) read(r io.Reader) {
	defer close(c.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	first := true
	var block []string
	var begin string // "TIME NUM FLAGS" of the open block
	for sc.Scan() {
		line := sc.Text()
		if begin != "" {
			if rest, ok := strings.CutPrefix(line, "%end "); ok && rest == begin {
				c.deliver(&first, begin, reply{lines: block})
				begin, block = "", nil
				continue
			}
			if rest, ok := strings.CutPrefix(line, "%error "); ok && rest == begin {
				c.deliver(&first, begin, reply{lines: block, err: true})
				begin, block = "", nil
				continue
			}
			block = append(block, line)
			continue
		}
		if rest, ok := strings.CutPrefix(line, "%begin "); ok {
			begin, block = rest, nil
		}
	}
	c.cmd.Wait()
	c.mu.Lock()
	c.err = errClosed
	for _, p := range c.pending {
		close(p)
	}
	c.pending = nil
	c.mu.Unlock()
	if first {
		c.started <- errClosed
	}
}

// deliver hands a finished block to its waiter. The first block is the
// answer to the attach command; blocks with FLAGS 0 are not ours.
func (c *ctl) deliver(first *bool, begin string, r reply) {
	if *first {
		*first = false
		if r.err {
			c.started <- fmt.Errorf("attach: %s", strings.Join(r.lines, " "))
		} else {
			c.started <- nil
		}
		return
	}
	if strings.HasSuffix(begin, " 0") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		return
	}
	p := c.pending[0]
	c.pending = c.pending[1:]
	p <- r
}

// run sends one command line and waits for its reply (one block per
// command on the line; the last one is returned).
func (c *ctl) run(ctx context.Context, line string) ([]string, error) {
	n := strings.Count(line, " ; ") + 1
	chans := make([]chan reply, n)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	for i := range chans {
		chans[i] = make(chan reply, 1)
		c.pending = append(c.pending, chans[i])
	}
	_, werr := io.WriteString(c.stdin, line+"\n")
	c.mu.Unlock()
	if werr != nil {
		return nil, werr
	}
	var last reply
	for _, ch := range chans {
		select {
		case r, ok := <-ch:
			if !ok {
				return nil, errClosed
			}
			if r.err {
				return r.lines, fmt.Errorf("%s: %s", line, strings.Join(r.lines, " "))
			}
			last = r
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return last.lines, nil
}

// detach closes tmux's stdin (a control client detaches at end of input)
// and waits up to two seconds for the process to end, then kills it.
func (c *ctl) detach() {
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(2 * time.Second):
		c.kill()
	}
}

func (c *ctl) kill() {
	if c.cmd.Process != nil {
		c.cmd.Process.Kill()
	}
	<-c.done
}

func (c *ctl) pid() int { return c.cmd.Process.Pid }

// pss returns the proportional set size of process pid in KiB
// (/proc/PID/smaps_rollup), 0 if it cannot be read.
func pss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				v, _ := strconv.ParseInt(f[0], 10, 64)
				return v
			}
		}
	}
	return 0
}

// segfaults returns the kernel's "tmux: server[PID]: segfault" lines for
// pid (empty if dmesg cannot be read).
func segfaults(pid int) []string {
	out, err := exec.Command("dmesg").Output()
	if err != nil {
		return nil
	}
	var lines []string
	needle := fmt.Sprintf("[%d]: segfault", pid)
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, needle) {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return lines
}
