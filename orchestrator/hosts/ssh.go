package hosts

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Hosts: tmux servers on other machines, reached over ssh (CONTRACT §17;
// the design is in docs/ARCHITECTURE.md). One ssh master connection per
// host, owned by this process; every control client of the host is a
// session multiplexed over it. What the engine does with a host's nodes
// after a (re)connect or a loss it is told through SSHConfig's hooks.

// Reconnect backoff: the first retry after a loss comes at once, then
// after backoffMin doubling up to backoffMax.
const (
	backoffMin = 200 * time.Millisecond
	backoffMax = 5 * time.Second
	// ConnectTimeout bounds one connection attempt (ssh's own
	// ConnectTimeout is 10 s of it).
	ConnectTimeout = 20 * time.Second
	readyLine      = "termsprawl-ssh-ready"
	// execSlots is how many short-lived ssh sessions a host opens at once:
	// sshd's default MaxSessions 10, less the admin, waiter and mirror
	// clients, less two spare (a human's `termsprawl attach` is its own
	// connection and does not count). The spares are for sessions that
	// ended here but not yet at sshd: a slot is free again once the local
	// ssh exits, and sshd counts the session until the channel's close
	// reaches it; with one spare, 64 launches at once were refused a
	// session in about one run of five (TestRemote64Nodes).
	execSlots = 5
)

// Host connection states (HostStatus.State).
const (
	StateConnecting  = "connecting"
	StateConnected   = "connected"
	StateUnreachable = "unreachable"
	// StateReconnecting is Status.Shown's word for a host that is not
	// connected while an attempt to connect is under way.
	StateReconnecting = "reconnecting"
)

// Error is why a host could not be used: it names the host, says what
// ssh or the host said, and what to do.
type Error struct {
	Host, Dest string
	// Reason is one word: refused, host-key, auth, no-tmux, resolve,
	// timeout, unknown-host, ssh.
	Reason string
	Msg    string
	Err    error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// ErrUnreachable is wrapped by the errors of operations on the nodes
// of a host that cannot be reached now.
var ErrUnreachable = errors.New("host unreachable")

// Probe is what a connected host told about itself.
type Probe struct {
	Tmux, TmuxVersion, Ctl, Home, Shell, Path, Hostname string
	Rdir                                                string // the remote dir, made, with tmux.conf in it
	ServerUp                                            bool   // the remote tmux server ran before this connection
}

// SSHConfig is what a host needs from the engine.
type SSHConfig struct {
	Spec tools.HostSpec
	// StateDir is this orchestrator's: the ssh ControlPath's dir, and the
	// origin that names this orchestrator's files on the host.
	StateDir string
	Deaths   chan struct{} // pane deaths on the host's server (shared)
	Log      *slog.Logger
	// Endpoint is the tool server's endpoint, nil until it listens.
	Endpoint func() *tools.Endpoint
	// SysProcAttr is the ssh master's (it dies with us).
	SysProcAttr func() *syscall.SysProcAttr
	// OnConnected runs after every connection the supervisor made (the
	// engine adopts the host's sessions); OnLost when a loss was seen,
	// before the connection is torn down (the engine marks the host's
	// nodes unreachable); AfterLost once it was (tests).
	OnConnected func(ctx context.Context)
	OnLost      func()
	AfterLost   func()
	// BeforeConnect, if set, runs at the start of every connection
	// attempt, after the host is marked as attempting (tests).
	BeforeConnect func()
}

// SSH is one machine: its ssh master, its tmux server and the supervisor
// goroutine that reconnects.
type SSH struct {
	cfg      SSHConfig
	spec     tools.HostSpec
	log      *slog.Logger
	ctlPath  string        // the ssh ControlPath
	kick     chan struct{} // capacity 1: someone saw the connection fail
	stop     chan struct{} // closed by Stop
	stopOnce sync.Once
	done     chan struct{} // closed when the supervisor returns
	started  bool

	// slots bounds the short-lived ssh sessions (Exec, a server's run and
	// cli) open at once: with the admin, waiter and mirror clients they
	// stay within sshd's default MaxSessions 10 (mirror.go).
	slots chan struct{}

	connectMu sync.Mutex // one connection attempt at a time (supervisor or a launch)
	// life is the host's tmux server's lifecycle lock (Tmux.Life),
	// shared by every connection's Tmux.
	life sync.Mutex

	mu         sync.Mutex // guards the fields below
	srv        *Tmux
	lastSrv    *Tmux // the last connected server (for mirrors attached late)
	master     *exec.Cmd
	masterDone chan struct{} // closed when the master exits
	probe      Probe
	rdir       string
	state      string
	lastErr    error
	lostAt     time.Time
	reconnects int
	lastGap    time.Duration // how long the last outage lasted
	since      time.Time     // when state last changed
	attempting bool          // a connection attempt is under way
}

// Status is one host as doctor and tests see it.
type Status struct {
	Name, Dest, State, Error, RemoteDir, Ctl, Tmux string
	Reconnects                                     int
	LastOutage                                     time.Duration
	MasterPID                                      int
	// Since is when State last changed; Attempting is whether a
	// connection attempt is under way.
	Since      time.Time
	Attempting bool
}

// Shown is the state as `termsprawl hosts` says it (CONTRACT §23):
// connected, reconnecting (not connected, an attempt under way) or
// unreachable.
func (st Status) Shown() string {
	switch {
	case st.State == StateConnected:
		return StateConnected
	case st.Attempting || st.State == StateConnecting:
		return StateReconnecting
	}
	return StateUnreachable
}

// NewSSH is the host of cfg.Spec, not connected yet.
func NewSSH(cfg SSHConfig) *SSH {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.SysProcAttr == nil {
		cfg.SysProcAttr = func() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
	}
	// The host's tmux server is this orchestrator's own (CONTRACT §23).
	cfg.Spec.Socket = cfg.Spec.OwnedSocket(cfg.StateDir)
	return &SSH{cfg: cfg, spec: cfg.Spec, log: cfg.Log, ctlPath: controlPath(cfg.StateDir, cfg.Spec.Name),
		slots: make(chan struct{}, execSlots),
		kick:  make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), state: StateConnecting, since: time.Now()}
}

// Spec is the host's configuration.
func (h *SSH) Spec() tools.HostSpec { return h.spec }

// Life is the host's tmux server's lifecycle lock.
func (h *SSH) Life() *sync.Mutex { return &h.life }

// Probe is what the host told about itself at the last connection, and
// the remote dir.
func (h *SSH) Probe() (Probe, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.probe, h.rdir
}

// LastServer is the host's server for a node's mirror: the connected one,
// else the last connected, else one with no clients (a node listed from
// its metadata before the host was ever reached).
func (h *SSH) LastServer() *Tmux {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.srv != nil {
		return h.srv
	}
	if h.lastSrv == nil {
		h.lastSrv = Remote{Bin: "tmux", Socket: h.spec.RemoteSocket(), Prefix: h.MuxPrefix(), Life: &h.life, Slots: h.slots}.Unconnected()
	}
	return h.lastSrv
}

// Status reports the host's connection.
func (h *SSH) Status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Status{Name: h.spec.Name, Dest: h.spec.Dest, State: h.state, RemoteDir: h.rdir, Ctl: h.probe.Ctl, Tmux: h.probe.TmuxVersion,
		Reconnects: h.reconnects, LastOutage: h.lastGap, Since: h.since, Attempting: h.attempting}
	if h.lastErr != nil {
		st.Error = h.lastErr.Error()
	}
	if h.master != nil && h.master.Process != nil && h.state == StateConnected {
		st.MasterPID = h.master.Process.Pid
	}
	return st
}

// controlPath is the ssh ControlPath of host name: in the state dir, or a
// short path in the temp dir when that would be too long for a socket
// (ssh adds a temporary suffix while it binds).
func controlPath(stateDir, name string) string {
	p := filepath.Join(stateDir, "hosts", name+".ssh")
	if len(p) <= 80 {
		return p
	}
	sum := sha256.Sum256([]byte(p))
	return filepath.Join(os.TempDir(), "tsp-"+hex.EncodeToString(sum[:6])+".ssh")
}

func (h *SSH) Server() *Tmux {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.srv
}

// sshBase is ssh with termsprawl's options and the host's own.
func (h *SSH) sshBase() []string {
	argv := append([]string{"ssh"}, tools.SSHOptions...)
	return append(argv, h.spec.SSHOptions...)
}

// muxPrefix runs a command on the host over the master connection.
func (h *SSH) MuxPrefix() []string {
	// ProxyCommand=false: when the master refuses a session (the host's
	// MaxSessions) ssh would quietly open a connection of its own; this
	// makes that fail instead, so every session rides the master.
	return append(h.sshBase(), "-S", h.ctlPath, "-o", "ControlMaster=no", "-o", "ProxyCommand=false", h.spec.Dest, "--")
}

// exec runs a POSIX shell script on the host over the master connection,
// with stdin, and returns its stdout.
func (h *SSH) Exec(ctx context.Context, script string, stdin []byte) ([]byte, error) {
	argv := append(h.MuxPrefix(), "/bin/sh", "-c", tmuxctl.ShellQuote(script))
	release, err := acquire(ctx, h.slots)
	if err != nil {
		return nil, fmt.Errorf("on host %s: %w", h.spec.Name, err)
	}
	defer release()
	var out, errb bytes.Buffer
	err = retryRefused(ctx, func() (string, error) {
		out.Reset()
		errb.Reset()
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Stdin = bytes.NewReader(stdin)
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return errb.String(), err
	})
	if err != nil {
		return out.Bytes(), fmt.Errorf("on host %s: %w: %s", h.spec.Name, err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// connect brings the host up: the ssh master, the probe, the remote dir
// and tmux config, the tmux server's admin and waiter clients, and (once
// the tool server listens) the reverse forward and endpoint.json.
func (h *SSH) Connect(ctx context.Context) error {
	h.connectMu.Lock()
	defer h.connectMu.Unlock()
	if h.Server() != nil {
		return nil
	}
	h.mu.Lock()
	h.attempting = true
	h.mu.Unlock()
	if h.cfg.BeforeConnect != nil {
		h.cfg.BeforeConnect()
	}
	err := h.connectLocked(ctx)
	h.mu.Lock()
	h.lastErr = err
	h.attempting = false
	if err != nil {
		h.setStateLocked(StateUnreachable)
	}
	h.mu.Unlock()
	return err
}

// setStateLocked changes the state and, when it differs, since. Call with
// mu held.
func (h *SSH) setStateLocked(state string) {
	if h.state != state {
		h.state, h.since = state, time.Now()
	}
}

// RoundTrip is one command's round trip to the host's tmux server over
// the connection (the admin client), or an error when not connected.
func (h *SSH) RoundTrip(ctx context.Context) (time.Duration, error) {
	srv := h.Server()
	if srv == nil || srv.Admin() == nil {
		return 0, fmt.Errorf("host %s: %w", h.spec.Name, ErrUnreachable)
	}
	start := time.Now()
	if _, err := srv.Admin().Run(ctx, tmuxctl.Command("display-message", "-p", "ok")); err != nil {
		return 0, fmt.Errorf("host %s: %w", h.spec.Name, err)
	}
	return time.Since(start), nil
}

func (h *SSH) connectLocked(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Dir(h.ctlPath), 0o700); err != nil {
		return fmt.Errorf("host %s: %w", h.spec.Name, err)
	}
	os.Remove(h.ctlPath) // a stale socket would make ssh run without multiplexing
	master, masterDone, err := h.startMaster(ctx)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		master.Process.Kill()
		<-masterDone
		return err
	}
	// One remote shell for the probe and the tmux config: every ssh
	// session costs a start of the remote user's shell.
	probe, err := h.runProbe(ctx)
	if err != nil {
		return fail(err)
	}
	rdir := probe.Rdir
	srv, err := Remote{Bin: probe.Tmux, Socket: h.spec.RemoteSocket(), Conf: rdir + "/tmux.conf", Deaths: h.cfg.Deaths,
		Life: &h.life, Prefix: h.MuxPrefix(), Slots: h.slots}.Connect(ctx)
	if err != nil {
		return fail(&Error{Host: h.spec.Name, Dest: h.spec.Dest, Reason: "tmux", Err: err,
			Msg: fmt.Sprintf("host %s: cannot start or reach its tmux server (tmux -L %s): %v", h.spec.Name, h.spec.RemoteSocket(), err)})
	}
	h.mu.Lock()
	h.master, h.masterDone, h.probe, h.rdir = master, masterDone, probe, rdir
	h.srv, h.lastSrv = srv, srv
	h.setStateLocked(StateConnected)
	if !h.lostAt.IsZero() {
		h.reconnects++
		h.lastGap = time.Since(h.lostAt)
		h.lostAt = time.Time{}
	}
	h.mu.Unlock()
	h.Publish(ctx)
	h.log.Info("host connected", "host", h.spec.Name, "dest", h.spec.Dest, "tmux", probe.TmuxVersion, "ctl", probe.Ctl, "remote_dir", rdir)
	return nil
}

// origin names this orchestrator on the remote side: this machine's name
// and a hash of the state dir, so two orchestrators never share files.
func (h *SSH) origin() string {
	name, _ := os.Hostname()
	name = slugRE.ReplaceAllString(name, "-")
	if name == "" {
		name = "host"
	}
	sum := sha256.Sum256([]byte(h.cfg.StateDir))
	return name + "-" + hex.EncodeToString(sum[:4])
}

// publish sets up the reverse forward of the tool port and writes the
// remote endpoint.json, once the tool server listens.
func (h *SSH) Publish(ctx context.Context) {
	var ep *tools.Endpoint
	if h.cfg.Endpoint != nil {
		ep = h.cfg.Endpoint()
	}
	h.mu.Lock()
	rdir, connected := h.rdir, h.srv != nil
	h.mu.Unlock()
	if ep == nil || !connected {
		return
	}
	hostPort := strings.TrimSuffix(strings.TrimPrefix(ep.URL, "http://"), "/call")
	spec := hostPort + ":" + hostPort // the same port there: the Host guard holds
	argv := append(h.sshBase(), "-S", h.ctlPath, "-O", "forward", "-R", spec, h.spec.Dest)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if out, err := cmd.CombinedOutput(); err != nil {
		h.log.Warn("reverse forward of the tool port failed: agents on the host cannot call termsprawl", "host", h.spec.Name, "port", hostPort, "err", err, "ssh", clipLine(string(out)))
	}
	b, err := json.MarshalIndent(ep, "", "  ")
	b = append(b, '\n')
	if err == nil {
		_, err = h.Exec(ctx, WriteFileScript(rdir, "endpoint.json"), b)
	}
	if err != nil {
		h.log.Warn("write endpoint.json on the host", "host", h.spec.Name, "err", err)
	}
}

// supervise watches the connection and reconnects with backoff. It is the
// host's goroutine (owner: the host; ends when stop closes).
func (h *SSH) supervise() {
	defer close(h.done)
	backoff := time.Duration(0)
	for {
		h.mu.Lock()
		srv, masterDone := h.srv, h.masterDone
		h.mu.Unlock()
		if srv != nil {
			var adminDone <-chan struct{} = srv.Admin().Done()
			var mirrorDone <-chan struct{}
			if m := srv.Mirror(); m != nil {
				mirrorDone = m.Client().Done()
			}
			select {
			case <-h.stop:
				return
			case <-masterDone:
			case <-mirrorDone:
			case <-adminDone:
			case <-h.kick:
				if h.Alive() {
					continue
				}
			}
			h.lose()
			backoff = 0
			continue
		}
		if backoff > 0 {
			t := time.NewTimer(backoff)
			select {
			case <-h.stop:
				t.Stop()
				return
			case <-t.C:
			case <-h.kick:
				t.Stop()
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), ConnectTimeout)
		go func() {
			select {
			case <-h.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := h.Connect(ctx)
		if err == nil && h.cfg.OnConnected != nil {
			h.cfg.OnConnected(ctx)
		}
		cancel()
		if err != nil {
			h.log.Debug("host reconnect failed", "host", h.spec.Name, "err", err)
			backoff = min(max(2*backoff, backoffMin), backoffMax)
		}
	}
}

// alive reports whether the connection works: the master runs and the
// admin client answers a round trip.
func (h *SSH) Alive() bool {
	h.mu.Lock()
	srv, masterDone := h.srv, h.masterDone
	h.mu.Unlock()
	if srv == nil {
		return false
	}
	select {
	case <-masterDone:
		return false
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err := srv.Admin().Run(ctx, tmuxctl.Command("display-message", "-p", "ok"))
	var ce *tmuxctl.CommandError
	return err == nil || errors.As(err, &ce)
}

// lose marks the host and its nodes unreachable and tears the connection
// down; the remote tmux server and its programs keep running.
func (h *SSH) lose() {
	h.mu.Lock()
	srv, master, masterDone := h.srv, h.master, h.masterDone
	h.srv, h.master = nil, nil
	h.setStateLocked(StateUnreachable)
	h.lostAt = time.Now()
	h.lastErr = fmt.Errorf("%w: the ssh connection to %s ended", ErrUnreachable, h.spec.Dest)
	h.mu.Unlock()
	h.log.Warn("host unreachable: its nodes are marked unreachable; reconnecting", "host", h.spec.Name)
	if h.cfg.OnLost != nil {
		h.cfg.OnLost()
	}
	if master != nil && master.Process != nil {
		master.Process.Kill()
		<-masterDone
	}
	if srv != nil {
		srv.Close()
	}
	if h.cfg.AfterLost != nil {
		h.cfg.AfterLost()
	}
}

// Kick tells a host's supervisor that a client of it ended.
func (h *SSH) Kick() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// startMaster starts the ssh master and waits until it accepts
// multiplexed sessions (its LocalCommand prints readyLine) or fails.
func (h *SSH) startMaster(ctx context.Context) (*exec.Cmd, chan struct{}, error) {
	argv := append(h.sshBase(), "-M", "-N", "-S", h.ctlPath, "-o", "ControlPersist=no", "-o", "ExitOnForwardFailure=no",
		"-o", "PermitLocalCommand=yes", "-o", "LocalCommand=echo "+readyLine, h.spec.Dest)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = h.cfg.SysProcAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	stderr := &tailWriter{max: 4096}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, &Error{Host: h.spec.Name, Dest: h.spec.Dest, Reason: "ssh", Err: err,
			Msg: fmt.Sprintf("host %s: cannot run ssh: %v (install openssh-client)", h.spec.Name, err)}
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		ok := false
		for sc.Scan() {
			if !ok && strings.TrimSpace(sc.Text()) == readyLine {
				ok = true
				ready <- true
			}
		}
		if !ok {
			ready <- false
		}
	}()
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	select {
	case ok := <-ready:
		if ok {
			return cmd, done, nil
		}
		<-done
		return nil, nil, sshError(h.spec, stderr.String(), cmd.ProcessState)
	case <-ctx.Done():
		cmd.Process.Kill()
		<-done
		return nil, nil, &Error{Host: h.spec.Name, Dest: h.spec.Dest, Reason: "timeout", Err: ctx.Err(),
			Msg: fmt.Sprintf("host %s (%s) did not answer in time over ssh: check `ssh -o BatchMode=yes %s true` (ssh said: %s)", h.spec.Name, h.spec.Dest, h.spec.Dest, clipLine(stderr.String()))}
	}
}

// sshError turns ssh's failure into a Error that says what to do.
func sshError(spec tools.HostSpec, stderr string, st *os.ProcessState) *Error {
	said := clipLine(stderr)
	e := &Error{Host: spec.Name, Dest: spec.Dest, Reason: "ssh", Err: fmt.Errorf("ssh exited: %v: %s", st, said)}
	low := strings.ToLower(stderr)
	switch {
	case strings.Contains(low, "connection refused"):
		e.Reason = "refused"
		e.Msg = fmt.Sprintf("host %s (%s) refused the ssh connection: is sshd running there and is the port right? (ssh said: %s)", spec.Name, spec.Dest, said)
	case strings.Contains(low, "remote host identification has changed") || strings.Contains(low, "host key verification failed") || strings.Contains(low, "host key for"):
		e.Reason = "host-key"
		e.Msg = fmt.Sprintf("host %s (%s): ssh refused its host key (changed, or not known yet). If the machine was reinstalled, check its new key, remove the old one with `ssh-keygen -R <hostname>`, then run `ssh %s true` once to accept the new one (ssh said: %s)", spec.Name, spec.Dest, spec.Dest, said)
	case strings.Contains(low, "permission denied") || strings.Contains(low, "too many authentication failures"):
		e.Reason = "auth"
		e.Msg = fmt.Sprintf("host %s (%s) wants a password or a key passphrase, and termsprawl never answers prompts (ssh runs with BatchMode=yes): set up key login (`ssh-copy-id %s`) or load your key into ssh-agent (`ssh-add`), then check with `ssh -o BatchMode=yes %s true` (ssh said: %s)", spec.Name, spec.Dest, spec.Dest, spec.Dest, said)
	case strings.Contains(low, "could not resolve hostname") || strings.Contains(low, "name or service not known"):
		e.Reason = "resolve"
		e.Msg = fmt.Sprintf("host %s: the name in %q cannot be resolved (ssh said: %s)", spec.Name, spec.Dest, said)
	case strings.Contains(low, "timed out"):
		e.Reason = "timeout"
		e.Msg = fmt.Sprintf("host %s (%s): the ssh connection timed out (ssh said: %s)", spec.Name, spec.Dest, said)
	default:
		e.Msg = fmt.Sprintf("host %s (%s): ssh failed (%v): %s — check `ssh -o BatchMode=yes %s true`", spec.Name, spec.Dest, st, said, spec.Dest)
	}
	return e
}

// clipLine is ssh's stderr as one short line (the warnings it prints
// before the reason are kept: the reason is usually last).
func clipLine(s string) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\r", "")), " ")
	if len(s) > 400 {
		s = s[len(s)-400:]
		if i := strings.IndexByte(s, ' '); i >= 0 {
			s = s[i+1:]
		}
		s = "… " + s
	}
	if s == "" {
		return "nothing"
	}
	return s
}

// probeScript prints what the host has as key=value lines ($1: the ctl
// path asked for, $2: the remote dir asked for, $3: this orchestrator's
// origin, $4: the remote tmux socket) and, when the host has tmux, writes stdin (the tmux config) to
// the remote dir, made mode 0700.
const probeScript = `printf 'home=%s\n' "$HOME"; printf 'shell=%s\n' "$SHELL"; printf 'path=%s\n' "$PATH"
printf 'hostname=%s\n' "$(uname -n 2>/dev/null)"
c="$1"; [ -n "$c" ] || c=$(command -v termsprawlctl 2>/dev/null); if [ -n "$c" ] && [ -x "$c" ]; then printf 'ctl=%s\n' "$c"; fi
t=$(command -v tmux 2>/dev/null) || exit 0
printf 'tmux=%s\n' "$t"; v=$("$t" -V 2>&1); printf 'tmuxv=%s\n' "$v"
case $v in "tmux 0."*|"tmux 1."*|"tmux 2."*|"tmux 3.0"*|"tmux 3.1"*) exit 0;; esac
"$t" -L "$4" -f /dev/null has-session -t '=termsprawl-admin' 2>/dev/null && printf 'server=up\n'
case $HOME in /*) ;; *) [ -n "$2" ] || exit 0;; esac
d="$2"; [ -n "$d" ] || d="$HOME/.local/state/termsprawl/remote/$3"
umask 077
if mkdir -p "$d/sessions" "$d/agent-tools" && chmod 700 "$d" && cat > "$d/.tmux.conf.tmp" && mv -f "$d/.tmux.conf.tmp" "$d/tmux.conf"; then
  printf 'rdir=%s\n' "$d"
else
  printf 'rdirerr=%s\n' "$d"
fi`

// runProbe asks the host for its tmux, termsprawlctl, home, shell and
// PATH. No tmux is a Error.
func (h *SSH) runProbe(ctx context.Context) (Probe, error) {
	q := tmuxctl.ShellQuote
	script := "set -- " + q(h.spec.Ctl) + " " + q(h.spec.RemoteDir) + " " + q(h.origin()) + " " + q(h.spec.RemoteSocket()) + "\n" + probeScript
	out, err := h.Exec(ctx, script, []byte(Conf))
	if err != nil {
		return Probe{}, &Error{Host: h.spec.Name, Dest: h.spec.Dest, Reason: "ssh", Err: err,
			Msg: fmt.Sprintf("host %s: cannot run commands there: %v", h.spec.Name, err)}
	}
	p, err := parseProbe(h.spec.Name, h.spec.Dest, string(out))
	if err != nil {
		return p, err
	}
	if h.spec.Ctl != "" && p.Ctl == "" {
		h.log.Warn("termsprawlctl not found on the host at the given --host-ctl path: its agents cannot call termsprawl", "host", h.spec.Name, "ctl", h.spec.Ctl)
	} else if p.Ctl == "" {
		h.log.Warn("no termsprawlctl on the host's PATH: its agents get no TERMSPRAWL_CTL (install it there or give --host-ctl NAME=PATH)", "host", h.spec.Name)
	}
	return p, nil
}

// WriteFileScript writes stdin to dir/name atomically (temp file, mv),
// creating dir (and dir/sessions) mode 0700, files 0600.
func WriteFileScript(dir, name string) string {
	d := tmuxctl.ShellQuote(dir)
	f := tmuxctl.ShellQuote(dir + "/" + name)
	tmp := tmuxctl.ShellQuote(dir + "/." + filepath.Base(name) + ".tmp")
	if strings.Contains(name, "/") {
		tmp = tmuxctl.ShellQuote(dir + "/" + filepath.Dir(name) + "/." + filepath.Base(name) + ".tmp")
	}
	return "umask 077 && mkdir -p " + d + "/sessions " + d + "/agent-tools && chmod 700 " + d + " && cat > " + tmp + " && mv -f " + tmp + " " + f
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if len(w.buf) > w.max {
		w.buf = w.buf[len(w.buf)-w.max:]
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

var _ io.Writer = (*tailWriter)(nil)

// parseProbe reads probeScript's key=value lines; what is missing or
// reported wrong is a Error.
func parseProbe(name, dest, out string) (Probe, error) {
	var p Probe
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "home":
			p.Home = v
		case "shell":
			p.Shell = v
		case "path":
			p.Path = v
		case "hostname":
			p.Hostname = v
		case "tmux":
			p.Tmux = v
		case "tmuxv":
			p.TmuxVersion = v
		case "ctl":
			p.Ctl = v
		case "rdir":
			p.Rdir = v
		case "server":
			p.ServerUp = v == "up"
		case "rdirerr":
			return p, &Error{Host: name, Dest: dest, Reason: "remote-dir",
				Msg: fmt.Sprintf("host %s: cannot make %s or write its tmux.conf: check the permissions there, or set remote_dir for it in %s", name, v, tools.HostsFile)}
		}
	}
	if p.Tmux == "" {
		return p, &Error{Host: name, Dest: dest, Reason: "no-tmux",
			Msg: fmt.Sprintf("host %s (%s) has no tmux on its PATH (%s): install tmux there (e.g. apt-get install tmux)", name, dest, p.Path)}
	}
	if major, minor, ok := TmuxVersion(p.TmuxVersion); ok && (major < minTmuxMajor || major == minTmuxMajor && minor < minTmuxMinor) {
		return p, &Error{Host: name, Dest: dest, Reason: "old-tmux",
			Msg: fmt.Sprintf("host %s (%s) has %s (%s): termsprawl needs tmux %d.%d or newer there (control-mode pause-after, display-popup): upgrade tmux on %s", name, dest, strings.TrimSpace(p.TmuxVersion), p.Tmux, minTmuxMajor, minTmuxMinor, name)}
	}
	if p.Rdir == "" {
		return p, &Error{Host: name, Dest: dest, Reason: "ssh",
			Msg: fmt.Sprintf("host %s: its $HOME is %q, not an absolute path: set remote_dir for it in %s", name, p.Home, tools.HostsFile)}
	}
	return p, nil
}

var slugRE = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// The oldest tmux a host may have.
const minTmuxMajor, minTmuxMinor = 3, 2

var tmuxVersionRE = regexp.MustCompile(`^tmux (?:next-)?(\d+)\.(\d+)`)

// TmuxVersion reads `tmux -V`'s "tmux 3.3a" (or "tmux next-3.4") as 3, 3;
// ok is false for what it cannot read ("tmux master": a build from
// source, taken as new enough).
func TmuxVersion(v string) (major, minor int, ok bool) {
	m := tmuxVersionRE.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return 0, 0, false
	}
	major, _ = strconv.Atoi(m[1])
	minor, _ = strconv.Atoi(m[2])
	return major, minor, true
}

// Start starts the supervisor: the host's goroutine, which watches the
// connection and reconnects with backoff until Stop.
func (h *SSH) Start() {
	h.mu.Lock()
	h.started = true
	h.mu.Unlock()
	go h.supervise()
}

// Stop stops the supervisor and waits for it. Idempotent.
func (h *SSH) Stop() {
	h.stopOnce.Do(func() { close(h.stop) })
	h.mu.Lock()
	started := h.started
	h.mu.Unlock()
	if started {
		<-h.done
	}
}

// Shutdown stops the supervisor and ends the connection: the server's
// clients, the master, the ControlPath. The remote server and its
// programs keep running.
func (h *SSH) Shutdown() {
	h.Stop()
	h.mu.Lock()
	srv, master, masterDone := h.srv, h.master, h.masterDone
	h.srv, h.master = nil, nil
	h.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
	if master != nil && master.Process != nil {
		master.Process.Kill()
		<-masterDone
	}
	os.Remove(h.ctlPath)
}
