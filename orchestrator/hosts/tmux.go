// Package hosts holds the tmux servers nodes live on: the local shards and
// the servers of ssh hosts, behind one Server. A server runs commands
// (its admin control client), gives the configuration of a control client
// for a session, runs programs on its machine (signals, a pid's
// /proc/PID/stat: on the host for a remote server, never this machine's
// /proc; what a local program's process tree is doing, activity.go), and
// has its own lifecycle lock. It knows nothing of nodes, the
// engine or the tool server (internal/archtest).
package hosts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/tmuxctl"
)

// AdminSession is the hidden session that keeps a server alive and hosts
// the orchestrator's own control clients. It is not a node.
const AdminSession = "termsprawl-admin"

// DeathChannel is the tmux wait-for channel the pane-died hook signals:
// tmux 3.3a has no pane-death notification for control clients.
const DeathChannel = "termsprawl-pane-died"

// Conf is a server's configuration, written to the state dir (or the
// host's remote dir) and passed with -f, and sourced again when an
// existing server is adopted.
const Conf = `# Written by termsprawl: the private server's settings.
set -gw remain-on-exit on
set -g remain-on-exit-format ""
set -g history-limit 10000
set -g status off
set -g escape-time 10
set -g default-terminal screen-256color
set -g update-environment ""
set -g exit-empty on
set-hook -g pane-died "wait-for -S ` + DeathChannel + `"
`

// Server is a tmux server nodes live on: a local shard or a host's server
// reached over ssh. Both are a *Tmux today; tests may put other
// implementations behind it.
type Server interface {
	// Socket is the server's name on its machine (tmux -L).
	Socket() string
	// Remote reports whether the server is on another machine.
	Remote() bool
	// Admin is the current admin control client (commands that are not
	// about one node).
	Admin() *tmuxctl.Client
	// ClientConfig is the configuration of a control client of this
	// server that starts with args.
	ClientConfig(args ...string) tmuxctl.Config
	// Life is the server's lifecycle lock: sessions are created and
	// destroyed on one server one at a time (tmux 3.3a crashes
	// otherwise); different servers are independent.
	Life() *sync.Mutex
	// ProcStat is /proc/PID/stat on the server's machine.
	ProcStat(ctx context.Context, pid int) ([]byte, error)
	// PidGone reports whether process pid has ended on the server's
	// machine (no such process, or a zombie).
	PidGone(ctx context.Context, pid int) bool
	// Activity is what pid and its descendants are doing (a local
	// server's only; a host's is ActivityUnknown).
	Activity(ctx context.Context, pid int) Activity
	// LivePids is which of pids still run on the server's machine (not
	// ended, not a zombie), checked in one round trip.
	LivePids(ctx context.Context, pids []int) (map[int]bool, error)
	// Signal signals pid's process group, then pid, on its machine.
	Signal(ctx context.Context, pid int, sig syscall.Signal)
	// SignalAll is Signal of every pid of pids, in one round trip.
	SignalAll(ctx context.Context, pids []int, sig syscall.Signal)
	// Close ends the orchestrator's clients of the server; the server and
	// its sessions keep running.
	Close()
}

// Tmux is one tmux server: its socket, configuration, an admin control
// client for commands that are not about one node, and a waiter client
// parked on the pane-death channel. A local server that died is started
// again by Ensure; a host's server is replaced by its host on reconnect.
type Tmux struct {
	bin, socket, conf string
	minimalEnv        []string
	deaths            chan struct{} // signalled (capacity 1) when some pane died
	// prefix runs tmux and programs through ssh for a server on another
	// machine; nil for a local one.
	prefix []string
	life   *sync.Mutex
	stop   chan struct{}
	stopMu sync.Once
	wg     sync.WaitGroup

	// slots bounds the short-lived ssh sessions (run, cli) a host's
	// server opens at once (execSlots); nil for a local one.
	slots chan struct{}
	// shared: a local server whose nodes share its mirror client (a
	// host's server always does).
	shared bool
	// clientsGen counts the changes of the server's clients that its
	// admin client was told of (a client attached, switched or detached),
	// and every new admin client: an answer about the clients is current
	// while it stays the same.
	clientsGen atomic.Uint64
	// humans is the last list of the server's human clients and the
	// clientsGen it was taken at (keepHumans).
	humans atomic.Pointer[keptClients]

	mu     sync.Mutex // guards admin, waiter and mirror (replaced by Ensure)
	admin  *tmuxctl.Client
	waiter *tmuxctl.Client
	mirror *Mirror // a host's server, or a shared local one: every node's output (mirror.go)
}

var _ Server = (*Tmux)(nil)

// Running reports whether a local tmux server answers on socket (without
// starting one).
func Running(ctx context.Context, bin, socket string, env []string) bool {
	cmd := exec.CommandContext(ctx, bin, "-L", socket, "-f", os.DevNull, "has-session", "-t", "="+AdminSession)
	cmd.Env = env
	return cmd.Run() == nil
}

// StartLocal starts (or connects to) the local server of socket, with its
// configuration conf (Conf and what the engine adds to it) written to
// stateDir; pane deaths on it are signalled on deaths (shared by every
// server). With mirror, the server also gets a mirror client (mirror.go)
// that carries the output of every node on it, as a host's server does;
// without, each node attaches a control client of its own.
func StartLocal(ctx context.Context, bin, socket, stateDir, conf string, env []string, deaths chan struct{}, mirror bool) (*Tmux, error) {
	if _, err := exec.LookPath(bin); err != nil {
		return nil, fmt.Errorf("find tmux: %w (install tmux, e.g. apt-get install tmux)", err)
	}
	confPath := filepath.Join(stateDir, "tmux.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return nil, fmt.Errorf("write tmux config: %w", err)
	}
	s := &Tmux{bin: bin, socket: socket, conf: confPath, minimalEnv: env, deaths: deaths, life: new(sync.Mutex), stop: make(chan struct{}), shared: mirror}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.connectLocked(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Remote is a host's server: tmux bin with conf on the host, reached
// through prefix (ssh over the host's master connection), sharing the
// host's lifecycle lock life across its connections.
type Remote struct {
	Bin, Socket, Conf string
	Prefix            []string
	Life              *sync.Mutex
	Deaths            chan struct{}
	// Slots is the host's bound on short-lived ssh sessions (SSH.Exec's).
	Slots chan struct{}
}

// Unconnected is a host's server with no clients: the server a node of a
// host never reached is listed on.
func (r Remote) Unconnected() *Tmux {
	return &Tmux{bin: r.Bin, socket: r.Socket, conf: r.Conf, prefix: r.Prefix, life: r.Life, deaths: r.Deaths, slots: r.Slots, stop: make(chan struct{})}
}

// Connect starts the host's server if needed and attaches its clients.
func (r Remote) Connect(ctx context.Context) (*Tmux, error) {
	s := r.Unconnected()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.connectLocked(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Tmux) Socket() string    { return s.socket }
func (s *Tmux) Remote() bool      { return s.prefix != nil }
func (s *Tmux) Life() *sync.Mutex { return s.life }

// cli runs one tmux command through the tmux binary (used only before the
// admin client exists: to start the server).
func (s *Tmux) cli(ctx context.Context, args ...string) (string, error) {
	argv := tmuxctl.PrefixArgv(s.prefix, true, append([]string{s.bin, "-L", s.socket, "-f", s.conf}, args...))
	release, err := acquire(ctx, s.slots)
	if err != nil {
		return "", err
	}
	defer release()
	var out []byte
	err = retryRefused(ctx, func() (string, error) {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = s.minimalEnv
		var err error
		out, err = cmd.CombinedOutput()
		return string(out), err
	})
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// connectLocked starts the server if needed and attaches the admin and
// waiter clients. Call with mu held.
func (s *Tmux) connectLocked(ctx context.Context) error {
	if _, err := s.cli(ctx, "has-session", "-t", "="+AdminSession); err != nil {
		// No server, or no admin session: create it (this starts the
		// server with the minimal environment as its global one).
		if _, err := s.cli(ctx, "new-session", "-d", "-s", AdminSession, "-x", "80", "-y", "24", "--", "sleep", "infinity"); err != nil {
			if _, err2 := s.cli(ctx, "has-session", "-t", "="+AdminSession); err2 != nil {
				return fmt.Errorf("start private tmux server %q: %w", s.socket, err)
			}
		}
	}
	cfg := s.ClientConfig("attach-session", "-t", "="+AdminSession)
	admin, err := tmuxctl.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("attach admin client: %w", err)
	}
	// SourceFile consumes the reply blocks tmux 3.3a sends for each of the
	// file's commands, so the next command (adoption's list-sessions) gets
	// its own reply, and it reports the file's errors.
	if err := admin.SourceFile(ctx, s.conf); err != nil {
		admin.Close()
		return fmt.Errorf("apply tmux config: %w", err)
	}
	waiter, err := tmuxctl.Start(ctx, cfg)
	if err != nil {
		admin.Close()
		return fmt.Errorf("attach waiter client: %w", err)
	}
	if s.prefix != nil || s.shared {
		// A host, or a shared local server: one client for every node's
		// output (mirror.go).
		mirror, err := startMirror(ctx, s, admin)
		if err != nil {
			waiter.Close()
			admin.Close()
			return err
		}
		s.mirror = mirror
	}
	s.admin, s.waiter = admin, waiter
	s.clientsGen.Add(1)
	// The admin client's notifications of other clients mark what was
	// known of them stale (ClientsGen); nobody needs the rest, nor the
	// waiter's: drain them so they do not pile up. Each goroutine ends
	// with its client.
	go func() {
		for ev := range admin.Events() {
			switch e := ev.(type) {
			case tmuxctl.ClientDetached:
				s.clientsGen.Add(1)
			case tmuxctl.SessionEvent:
				if e.Name == "client-session-changed" {
					s.clientsGen.Add(1)
				}
			}
		}
		s.clientsGen.Add(1)
	}()
	go func() {
		for range waiter.Events() {
		}
	}()
	s.wg.Add(1)
	go s.waitDeaths(waiter)
	return nil
}

// ClientConfig is the tmuxctl configuration of a control client of this
// server that starts with args.
func (s *Tmux) ClientConfig(args ...string) tmuxctl.Config {
	return tmuxctl.Config{Tmux: s.bin, Socket: s.socket, ConfigFile: s.conf, Args: args, Prefix: s.prefix, ShellQuote: s.prefix != nil}
}

// Mirror is a host's server's, or a shared local server's, client for
// every node's output (nil for a local server whose nodes have clients of
// their own, and for a host's server never connected).
func (s *Tmux) Mirror() *Mirror {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mirror
}

// ClientsGen changes whenever the server's admin client is told that a
// client attached, switched session or detached (tmux 3.3a sends
// %client-session-changed and %client-detached to every control client),
// and when the admin client is replaced or ends: a list of the server's
// clients taken when it had a value stays true while it has it.
func (s *Tmux) ClientsGen() uint64 { return s.clientsGen.Load() }

// keptHumans is the list of human clients kept at gen (Shards.HumanClients),
// if the server's clients have not changed since.
func (s *Tmux) keptHumans(gen uint64) (map[string][]string, bool) {
	k := s.humans.Load()
	if k == nil || k.gen != gen {
		return nil, false
	}
	return k.sessions, true
}

// keepHumans keeps sessions, the list taken at gen (ClientsGen read before
// the question was sent: a change meanwhile makes it stale at once),
// unless a list taken later is kept already. sessions is never changed
// once kept.
func (s *Tmux) keepHumans(gen uint64, sessions map[string][]string) {
	k := &keptClients{gen: gen, sessions: sessions}
	for {
		old := s.humans.Load()
		if old != nil && old.gen > gen {
			return
		}
		if s.humans.CompareAndSwap(old, k) {
			return
		}
	}
}

// Shared reports whether the server's nodes share its mirror client.
func (s *Tmux) Shared() bool { return s.prefix != nil || s.shared }

// LocalMirror returns a shared local server's mirror client, attaching a
// new one first if the last one ended (a human's detach-client, say)
// while the server lives. Call it under the server's lifecycle lock:
// a control client must not start while sessions change (tmux 3.3a,
// docs/TMUX-CRASHES.md).
func (s *Tmux) LocalMirror(ctx context.Context) (*Mirror, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mirror != nil && s.mirror.c.Err() == nil {
		return s.mirror, nil
	}
	if s.admin == nil || s.admin.Err() != nil {
		return nil, fmt.Errorf("mirror client of %s: the server's admin client has ended", s.socket)
	}
	if s.mirror != nil {
		s.mirror.close()
	}
	m, err := startMirror(ctx, s, s.admin)
	if err != nil {
		s.mirror = nil
		return nil, err
	}
	s.mirror = m
	return m, nil
}

// Admin returns the current admin client (nil for a host's server that
// was never connected).
func (s *Tmux) Admin() *tmuxctl.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admin
}

// Ensure reconnects (starting a new server) if the admin client has
// ended, for example because the tmux server was killed.
func (s *Tmux) Ensure(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin.Err() == nil {
		return nil
	}
	s.admin.Close()
	s.waiter.Close()
	if s.mirror != nil {
		s.mirror.close()
		s.mirror = nil
	}
	return s.connectLocked(ctx)
}

// waitDeaths parks the waiter client on the death channel; every wake-up
// is passed on to deaths, whose reader checks the panes. A signal sent
// while nobody waits is remembered by tmux, so none is lost.
func (s *Tmux) waitDeaths(waiter *tmuxctl.Client) {
	defer s.wg.Done()
	for {
		_, err := waiter.Run(context.Background(), tmuxctl.Command("wait-for", DeathChannel))
		select {
		case <-s.stop:
			return
		default:
		}
		if err != nil {
			if errors.Is(err, tmuxctl.ErrClosed) {
				return
			}
			time.Sleep(100 * time.Millisecond) // a refused wait-for: do not spin
			continue
		}
		select {
		case s.deaths <- struct{}{}:
		default:
		}
	}
}

// Close ends the orchestrator's clients; the server and its sessions keep
// running. A host's server is closed without waiting long for a round
// trip (its connection may be gone). Idempotent.
func (s *Tmux) Close() {
	first := false
	s.stopMu.Do(func() {
		close(s.stop)
		first = true
	})
	if !first {
		return
	}
	s.mu.Lock()
	admin, waiter, mirror := s.admin, s.waiter, s.mirror
	s.mu.Unlock()
	if mirror != nil {
		mirror.close()
	}
	if admin == nil {
		return
	}
	wait := 2 * time.Second
	if s.prefix != nil {
		wait = time.Second
	}
	// Wake the parked wait-for so the waiter's queue is empty, then close.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	admin.Run(ctx, tmuxctl.Command("wait-for", "-S", DeathChannel))
	cancel()
	waiter.Close()
	admin.Close()
	s.wg.Wait()
}

// run runs argv on the server's machine and returns its stdout.
func (s *Tmux) run(ctx context.Context, argv ...string) ([]byte, error) {
	argv = tmuxctl.PrefixArgv(s.prefix, true, argv)
	release, err := acquire(ctx, s.slots)
	if err != nil {
		return nil, err
	}
	defer release()
	var out []byte
	err = retryRefused(ctx, func() (string, error) {
		var errb bytes.Buffer
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Stderr = &errb
		var err error
		out, err = cmd.Output()
		return errb.String(), err
	})
	return out, err
}

// sessionRetries is how many times a command whose ssh session the host
// refused is tried again, after 20 ms, then twice as long each time (1.26 s
// in all).
const sessionRetries = 6

// retryRefused runs once, and again while ssh says the host refused its
// session (sshd's MaxSessions): nothing ran on the host then. The host
// still counts sessions that ended here until their close reaches it, so
// a burst of short commands can be refused one although termsprawl keeps
// fewer open (execSlots). once returns what ssh wrote on stderr.
func retryRefused(ctx context.Context, once func() (stderr string, err error)) error {
	wait := 20 * time.Millisecond
	for try := 0; ; try++ {
		stderr, err := once()
		if err == nil || try == sessionRetries || !strings.Contains(stderr, "open refused") {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		wait *= 2
	}
}

// acquire takes one of slots (nil: no bound) until release, or fails when
// ctx ends first.
func acquire(ctx context.Context, slots chan struct{}) (release func(), err error) {
	if slots == nil {
		return func() {}, nil
	}
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for a free ssh session: %w", ctx.Err())
	}
}

// ProcStat is /proc/PID/stat on the server's machine: read here for a
// local server, on the host for a remote one (CONTRACT §23).
func (s *Tmux) ProcStat(ctx context.Context, pid int) ([]byte, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	if s.prefix == nil {
		return os.ReadFile(path)
	}
	return s.run(ctx, "cat", path)
}

// PidGone reports whether pid has ended on the server's machine: no such
// process, or a zombie (state Z after the command name in its stat).
func (s *Tmux) PidGone(ctx context.Context, pid int) bool {
	if pid <= 0 {
		return true
	}
	if s.prefix == nil {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
	}
	b, err := s.ProcStat(ctx, pid)
	if err != nil {
		// Locally: it exists (kill said so) but cannot be read: alive.
		// On a host: no stat is no process, unless ssh itself failed.
		// (ssh's own failure is exit status 255).
		var ee *exec.ExitError
		return s.prefix != nil && errors.As(err, &ee) && ee.ExitCode() != 255
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && strings.HasPrefix(string(b[i+1:]), " Z")
}

// LivePids is which of pids still run on the server's machine, as
// PidGone decides, for a host in one ssh session: confirming 64 programs
// gone one session each outlasted a close's deadline on a loaded machine.
func (s *Tmux) LivePids(ctx context.Context, pids []int) (map[int]bool, error) {
	live := map[int]bool{}
	if s.prefix == nil {
		for _, p := range pids {
			if !s.PidGone(ctx, p) {
				live[p] = true
			}
		}
		return live, nil
	}
	script := `for p in` + pidWords(pids) + `; do s=$(cat /proc/$p/stat 2>/dev/null) || continue; case "${s##*)}" in " Z"*) ;; *) echo $p ;; esac; done`
	out, err := s.run(ctx, "sh", "-c", script)
	if err != nil {
		return nil, err
	}
	for _, f := range strings.Fields(string(out)) {
		if p, err := strconv.Atoi(f); err == nil {
			live[p] = true
		}
	}
	return live, nil
}

// pidWords is pids (those > 0) as shell words, each after a space.
func pidWords(pids []int) string {
	var b strings.Builder
	for _, p := range pids {
		if p > 0 {
			b.WriteString(" " + strconv.Itoa(p))
		}
	}
	return b.String()
}

// SignalAll signals each of pids as Signal does, for a host in one ssh
// session (64 sessions, a host's exec slots at a time, took seconds of a
// close's deadline on a loaded machine).
func (s *Tmux) SignalAll(ctx context.Context, pids []int, sig syscall.Signal) {
	if s.prefix == nil {
		for _, p := range pids {
			s.Signal(ctx, p, sig)
		}
		return
	}
	words := pidWords(pids)
	if words == "" {
		return
	}
	n := strconv.Itoa(int(sig))
	s.run(ctx, "sh", "-c", "for p in"+words+"; do kill -"+n+" -- -$p 2>/dev/null; kill -"+n+" $p 2>/dev/null; done; true")
}

// Signal signals pid's process group, then pid (the pane's program leads
// its own group): with kill(2) here, with kill(1) on a host.
func (s *Tmux) Signal(ctx context.Context, pid int, sig syscall.Signal) {
	if pid <= 0 {
		return
	}
	if s.prefix == nil {
		syscall.Kill(-pid, sig)
		syscall.Kill(pid, sig)
		return
	}
	n, p := strconv.Itoa(int(sig)), strconv.Itoa(pid)
	s.run(ctx, "sh", "-c", "kill -"+n+" -- -"+p+" 2>/dev/null; kill -"+n+" "+p+" 2>/dev/null; true")
}

// keptClients is a server's list of human clients, per session name, and
// the ClientsGen it was taken at.
type keptClients struct {
	gen      uint64
	sessions map[string][]string
}
