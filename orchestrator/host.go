package orchestrator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Hosts: tmux servers on other machines, reached over ssh (CONTRACT §17;
// the design is in docs/ARCHITECTURE.md). One ssh master connection per
// host, owned by this process; every control client of the host is a
// session multiplexed over it.

// Reconnect backoff: the first retry after a loss comes at once, then
// after hostBackoffMin doubling up to hostBackoffMax.
const (
	hostBackoffMin = 200 * time.Millisecond
	hostBackoffMax = 5 * time.Second
	// hostConnectTimeout bounds one connection attempt (ssh's own
	// ConnectTimeout is 10 s of it).
	hostConnectTimeout = 20 * time.Second
	readyLine          = "termsprawl-ssh-ready"
)

// Host connection states (HostStatus.State).
const (
	HostConnecting  = "connecting"
	HostConnected   = "connected"
	HostUnreachable = "unreachable"
)

// HostError is why a host could not be used: it names the host, says what
// ssh or the host said, and what to do.
type HostError struct {
	Host, Dest string
	// Reason is one word: refused, host-key, auth, no-tmux, resolve,
	// timeout, unknown-host, ssh.
	Reason string
	Msg    string
	Err    error
}

func (e *HostError) Error() string { return e.Msg }
func (e *HostError) Unwrap() error { return e.Err }

// ErrHostUnreachable is wrapped by the errors of operations on the nodes
// of a host that cannot be reached now.
var ErrHostUnreachable = errors.New("host unreachable")

// hostProbe is what a connected host told about itself.
type hostProbe struct {
	tmux, tmuxVersion, ctl, home, shell, path, hostname string
	rdir                                                string // the remote dir, made, with tmux.conf in it
	serverUp                                            bool   // the remote tmux server ran before this connection
}

// hostSet is the orchestrator's hosts.
type hostSet struct {
	mu       sync.Mutex // guards byName and endpoint
	byName   map[string]*remoteHost
	endpoint *tools.Endpoint // the tool server's, once it listens (SetEndpoint)
}

// remoteHost is one machine: its ssh master, its tmux server and the
// supervisor goroutine that reconnects.
type remoteHost struct {
	o        *Orchestrator
	spec     tools.HostSpec
	ctlPath  string        // the ssh ControlPath
	kick     chan struct{} // capacity 1: someone saw the connection fail
	stop     chan struct{} // closed by stopHosts
	stopOnce sync.Once
	done     chan struct{} // closed when the supervisor returns

	connectMu sync.Mutex // one connection attempt at a time (supervisor or a launch)
	// life is the host's tmux server's lifecycle lock (tmuxServer.life),
	// shared by every connection's tmuxServer.
	life sync.Mutex

	mu         sync.Mutex // guards the fields below
	srv        *tmuxServer
	lastSrv    *tmuxServer // the last connected server (for mirrors attached late)
	master     *exec.Cmd
	masterDone chan struct{} // closed when the master exits
	probe      hostProbe
	rdir       string
	state      string
	lastErr    error
	lostAt     time.Time
	reconnects int
	lastGap    time.Duration // how long the last outage lasted
}

// HostStatus is one host as doctor and tests see it.
type HostStatus struct {
	Name, Dest, State, Error, RemoteDir, Ctl, Tmux string
	Reconnects                                     int
	LastOutage                                     time.Duration
	MasterPID                                      int
}

// startHosts makes the host set and, for each host, connects, adopts its
// sessions and starts its supervisor. A host that cannot be reached does
// not stop the orchestrator: it is logged and retried in the background.
func (o *Orchestrator) startHosts(ctx context.Context) error {
	o.hosts = &hostSet{byName: map[string]*remoteHost{}}
	seen := map[string]string{}
	for _, spec := range o.cfg.Hosts {
		if err := tools.CheckHost(spec); err != nil {
			return err
		}
		if d, ok := seen[spec.Name]; ok {
			return fmt.Errorf("%w: host name %q is given twice (%s and %s): one name per machine", tools.ErrHost, spec.Name, d, spec.Dest)
		}
		seen[spec.Name] = spec.Dest
	}
	var wg sync.WaitGroup
	for _, spec := range o.cfg.Hosts {
		h := &remoteHost{o: o, spec: spec, ctlPath: controlPath(o.cfg.StateDir, spec.Name),
			kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), state: HostConnecting}
		o.hosts.byName[spec.Name] = h
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, hostConnectTimeout)
			defer cancel()
			if err := h.connect(cctx); err != nil {
				o.log.Warn("host not reachable; retrying in the background", "host", spec.Name, "err", err)
				h.placeholders()
			} else {
				h.adoptSessions(cctx)
			}
			go h.supervise()
		}()
	}
	wg.Wait()
	return nil
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

// host returns the host of name, or nil.
func (o *Orchestrator) host(name string) *remoteHost {
	if o.hosts == nil {
		return nil
	}
	o.hosts.mu.Lock()
	defer o.hosts.mu.Unlock()
	return o.hosts.byName[name]
}

// hostNames lists the configured hosts.
func (o *Orchestrator) hostNames() []string {
	if o.hosts == nil {
		return nil
	}
	o.hosts.mu.Lock()
	defer o.hosts.mu.Unlock()
	var out []string
	for n := range o.hosts.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// hostServers returns the tmux servers of the connected hosts.
func (o *Orchestrator) hostServers() []*tmuxServer {
	var out []*tmuxServer
	for _, name := range o.hostNames() {
		if srv := o.host(name).server(); srv != nil {
			out = append(out, srv)
		}
	}
	return out
}

// Hosts reports every host's connection.
func (o *Orchestrator) Hosts() []HostStatus {
	var out []HostStatus
	for _, name := range o.hostNames() {
		h := o.host(name)
		h.mu.Lock()
		st := HostStatus{Name: name, Dest: h.spec.Dest, State: h.state, RemoteDir: h.rdir, Ctl: h.probe.ctl, Tmux: h.probe.tmuxVersion,
			Reconnects: h.reconnects, LastOutage: h.lastGap}
		if h.lastErr != nil {
			st.Error = h.lastErr.Error()
		}
		if h.master != nil && h.master.Process != nil && h.state == HostConnected {
			st.MasterPID = h.master.Process.Pid
		}
		h.mu.Unlock()
		out = append(out, st)
	}
	return out
}

func (h *remoteHost) server() *tmuxServer {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.srv
}

// sshBase is ssh with termsprawl's options and the host's own.
func (h *remoteHost) sshBase() []string {
	argv := append([]string{"ssh"}, tools.SSHOptions...)
	return append(argv, h.spec.SSHOptions...)
}

// muxPrefix runs a command on the host over the master connection.
func (h *remoteHost) muxPrefix() []string {
	// ProxyCommand=false: when the master refuses a session (the host's
	// MaxSessions) ssh would quietly open a connection of its own; this
	// makes that fail instead, so every session rides the master.
	return append(h.sshBase(), "-S", h.ctlPath, "-o", "ControlMaster=no", "-o", "ProxyCommand=false", h.spec.Dest, "--")
}

// exec runs a POSIX shell script on the host over the master connection,
// with stdin, and returns its stdout.
func (h *remoteHost) exec(ctx context.Context, script string, stdin []byte) ([]byte, error) {
	argv := append(h.muxPrefix(), "/bin/sh", "-c", tmuxctl.ShellQuote(script))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("on host %s: %w: %s", h.spec.Name, err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// connect brings the host up: the ssh master, the probe, the remote dir
// and tmux config, the tmux server's admin and waiter clients, and (once
// the tool server listens) the reverse forward and endpoint.json.
func (h *remoteHost) connect(ctx context.Context) error {
	h.connectMu.Lock()
	defer h.connectMu.Unlock()
	if h.server() != nil {
		return nil
	}
	err := h.connectLocked(ctx)
	h.mu.Lock()
	h.lastErr = err
	if err != nil {
		h.state = HostUnreachable
	}
	h.mu.Unlock()
	return err
}

func (h *remoteHost) connectLocked(ctx context.Context) error {
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
	rdir := probe.rdir
	srv, err := hosts.Remote{Bin: probe.tmux, Socket: h.spec.RemoteSocket(), Conf: rdir + "/tmux.conf", Deaths: h.o.deaths,
		Life: &h.life, Prefix: h.muxPrefix()}.Connect(ctx)
	if err != nil {
		return fail(&HostError{Host: h.spec.Name, Dest: h.spec.Dest, Reason: "tmux", Err: err,
			Msg: fmt.Sprintf("host %s: cannot start or reach its tmux server (tmux -L %s): %v", h.spec.Name, h.spec.RemoteSocket(), err)})
	}
	h.mu.Lock()
	h.master, h.masterDone, h.probe, h.rdir = master, masterDone, probe, rdir
	h.srv, h.lastSrv, h.state = srv, srv, HostConnected
	if !h.lostAt.IsZero() {
		h.reconnects++
		h.lastGap = time.Since(h.lostAt)
		h.lostAt = time.Time{}
	}
	h.mu.Unlock()
	h.publish(ctx)
	h.o.log.Info("host connected", "host", h.spec.Name, "dest", h.spec.Dest, "tmux", probe.tmuxVersion, "ctl", probe.ctl, "remote_dir", rdir)
	return nil
}

// origin names this orchestrator on the remote side: this machine's name
// and a hash of the state dir, so two orchestrators never share files.
func (h *remoteHost) origin() string {
	name, _ := os.Hostname()
	name = slugRE.ReplaceAllString(name, "-")
	if name == "" {
		name = "host"
	}
	sum := sha256.Sum256([]byte(h.o.cfg.StateDir))
	return name + "-" + hex.EncodeToString(sum[:4])
}

// publish sets up the reverse forward of the tool port and writes the
// remote endpoint.json, once the tool server listens.
func (h *remoteHost) publish(ctx context.Context) {
	o := h.o
	o.hosts.mu.Lock()
	ep := o.hosts.endpoint
	o.hosts.mu.Unlock()
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
		o.log.Warn("reverse forward of the tool port failed: agents on the host cannot call termsprawl", "host", h.spec.Name, "port", hostPort, "err", err, "ssh", clipLine(string(out)))
	}
	b, err := jsonBytes(ep)
	if err == nil {
		_, err = h.exec(ctx, writeFileScript(rdir, "endpoint.json"), b)
	}
	if err != nil {
		o.log.Warn("write endpoint.json on the host", "host", h.spec.Name, "err", err)
	}
}

// SetEndpoint tells the hosts where the tool server listens: each gets
// the reverse forward and its endpoint.json now and after every reconnect.
func (o *Orchestrator) SetEndpoint(ep tools.Endpoint) {
	if o.hosts == nil {
		return
	}
	o.hosts.mu.Lock()
	o.hosts.endpoint = &ep
	o.hosts.mu.Unlock()
	for _, name := range o.hostNames() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		o.host(name).publish(ctx)
		cancel()
	}
}

// supervise watches the connection and reconnects with backoff. It is the
// host's goroutine (owner: the host; ends when stop closes).
func (h *remoteHost) supervise() {
	defer close(h.done)
	backoff := time.Duration(0)
	for {
		h.mu.Lock()
		srv, masterDone := h.srv, h.masterDone
		h.mu.Unlock()
		if srv != nil {
			var adminDone <-chan struct{} = srv.Admin().Done()
			select {
			case <-h.stop:
				return
			case <-masterDone:
			case <-adminDone:
			case <-h.kick:
				if h.alive() {
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
		ctx, cancel := context.WithTimeout(context.Background(), hostConnectTimeout)
		go func() {
			select {
			case <-h.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := h.connect(ctx)
		if err == nil {
			h.adoptSessions(ctx)
		}
		cancel()
		if err != nil {
			h.o.log.Debug("host reconnect failed", "host", h.spec.Name, "err", err)
			backoff = min(max(2*backoff, hostBackoffMin), hostBackoffMax)
		}
	}
}

// alive reports whether the connection works: the master runs and the
// admin client answers a round trip.
func (h *remoteHost) alive() bool {
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
func (h *remoteHost) lose() {
	h.mu.Lock()
	srv, master, masterDone := h.srv, h.master, h.masterDone
	h.srv, h.master, h.state = nil, nil, HostUnreachable
	h.lostAt = time.Now()
	h.lastErr = fmt.Errorf("%w: the ssh connection to %s ended", ErrHostUnreachable, h.spec.Dest)
	h.mu.Unlock()
	h.o.log.Warn("host unreachable: its nodes are marked unreachable; reconnecting", "host", h.spec.Name)
	for _, n := range h.o.sortedNodes() {
		if _, _, gone := n.state(); n.meta.Host == h.spec.Name && !gone {
			n.setStatus(tools.StatusUnreachable, nil)
		}
	}
	if master != nil && master.Process != nil {
		master.Process.Kill()
		<-masterDone
	}
	if srv != nil {
		srv.Close()
	}
	if testHookHostLost != nil {
		testHookHostLost(h.spec.Name)
	}
}

// Test hooks: testHookHostLost runs when a host was marked unreachable,
// before the supervisor reconnects; testHookHostAdopted after a
// (re)connect's sessions are mirrored again.
var testHookHostLost, testHookHostAdopted func(host string)

// stopHosts stops every supervisor (Close, before it waits for the ops:
// a supervisor adopts sessions under its host's lifecycle lock).
// Idempotent.
func (o *Orchestrator) stopHosts() {
	for _, name := range o.hostNames() {
		h := o.host(name)
		h.stopOnce.Do(func() { close(h.stop) })
		<-h.done
	}
}

// closeHosts ends every connection (Close, after the nodes detached).
func (o *Orchestrator) closeHosts() {
	o.stopHosts()
	for _, name := range o.hostNames() {
		h := o.host(name)
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
}

// kickHost tells a host's supervisor that a client of it ended.
func (h *remoteHost) kickHost() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}
