package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/tmuxctl"
)

// adminSession is the hidden session that keeps the private server alive
// and hosts the orchestrator's own control clients. It is not a node.
const adminSession = "termsprawl-admin"

// deathChannel is the tmux wait-for channel the pane-died hook signals:
// tmux 3.3a has no pane-death notification for control clients.
const deathChannel = "termsprawl-pane-died"

// TmuxServerConf is the private server's configuration, written to the
// state dir and passed with -f, and sourced again when an existing server
// is adopted. (Exported for the tmux measurements in internal/blastradius.)
const TmuxServerConf = `# Written by termsprawl: the private server's settings.
set -gw remain-on-exit on
set -g remain-on-exit-format ""
set -g history-limit 10000
set -g status off
set -g escape-time 10
set -g default-terminal screen-256color
set -g update-environment ""
set -g exit-empty on
set-hook -g pane-died "wait-for -S ` + deathChannel + `"
`

// tmuxServer is the private tmux server as the orchestrator sees it: its
// socket, configuration, an admin control client for commands that are not
// about one node, and a waiter client parked on the pane-death channel. If
// the server dies, ensure starts a new one (and new clients) on demand.
type tmuxServer struct {
	bin, socket, conf string
	minimalEnv        []string
	deaths            chan struct{} // signalled (capacity 1) when some pane died
	// prefix runs tmux through ssh for a server on another machine
	// (host.go); nil for a local one.
	prefix []string
	// life is the server's lifecycle lock: sessions are created and
	// destroyed on one server one at a time (tmux 3.3a crashes otherwise,
	// docs/TMUX-CRASHES.md); different servers are independent. A host's
	// connections share the host's lock (one remote tmux server).
	life *sync.Mutex
	stop chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex // guards admin and waiter (replaced by ensure)
	admin  *tmuxctl.Client
	waiter *tmuxctl.Client
}

// running reports whether a tmux server answers on socket (without
// starting one).
func running(ctx context.Context, bin, socket string, env []string) bool {
	cmd := exec.CommandContext(ctx, bin, "-L", socket, "-f", os.DevNull, "has-session", "-t", "="+adminSession)
	cmd.Env = env
	return cmd.Run() == nil
}

// cli runs one tmux command through the tmux binary (used only before the
// admin client exists: to start the server).
func (s *tmuxServer) cli(ctx context.Context, args ...string) (string, error) {
	argv := tmuxctl.PrefixArgv(s.prefix, true, append([]string{s.bin, "-L", s.socket, "-f", s.conf}, args...))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = s.minimalEnv
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// startTmuxServer starts (or connects to) the private server of socket;
// pane deaths on it are signalled on deaths (shared by every shard).
func startTmuxServer(ctx context.Context, bin, socket, stateDir string, env []string, deaths chan struct{}) (*tmuxServer, error) {
	if _, err := exec.LookPath(bin); err != nil {
		return nil, fmt.Errorf("find tmux: %w (install tmux, e.g. apt-get install tmux)", err)
	}
	conf := filepath.Join(stateDir, "tmux.conf")
	if err := os.WriteFile(conf, []byte(TmuxServerConf), 0o600); err != nil {
		return nil, fmt.Errorf("write tmux config: %w", err)
	}
	s := &tmuxServer{bin: bin, socket: socket, conf: conf, minimalEnv: env, deaths: deaths, life: new(sync.Mutex), stop: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.connectLocked(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// connectLocked starts the server if needed and attaches the admin and
// waiter clients. Call with mu held.
func (s *tmuxServer) connectLocked(ctx context.Context) error {
	if _, err := s.cli(ctx, "has-session", "-t", "="+adminSession); err != nil {
		// No server, or no admin session: create it (this starts the
		// server with the minimal environment as its global one).
		if _, err := s.cli(ctx, "new-session", "-d", "-s", adminSession, "-x", "80", "-y", "24", "--", "sleep", "infinity"); err != nil {
			if _, err2 := s.cli(ctx, "has-session", "-t", "="+adminSession); err2 != nil {
				return fmt.Errorf("start private tmux server %q: %w", s.socket, err)
			}
		}
	}
	cfg := s.clientConfig("attach-session", "-t", "="+adminSession)
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
	s.admin, s.waiter = admin, waiter
	// Nobody needs these clients' notifications: drain them so they do
	// not pile up.
	for _, c := range []*tmuxctl.Client{admin, waiter} {
		go func() {
			for range c.Events() {
			}
		}()
	}
	s.wg.Add(1)
	go s.waitDeaths(waiter)
	return nil
}

// clientConfig is the tmuxctl configuration of a control client of this
// server that starts with args.
func (s *tmuxServer) clientConfig(args ...string) tmuxctl.Config {
	return tmuxctl.Config{Tmux: s.bin, Socket: s.socket, ConfigFile: s.conf, Args: args, Prefix: s.prefix, ShellQuote: s.prefix != nil}
}

// adminClient returns the current admin client.
func (s *tmuxServer) adminClient() *tmuxctl.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admin
}

// ensure reconnects (starting a new server) if the admin client has
// ended, for example because the tmux server was killed.
func (s *tmuxServer) ensure(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin.Err() == nil {
		return nil
	}
	s.admin.Close()
	s.waiter.Close()
	return s.connectLocked(ctx)
}

// waitDeaths parks the waiter client on the death channel; every wake-up
// is passed on to the orchestrator, which checks its panes. A signal sent
// while nobody waits is remembered by tmux, so none is lost.
func (s *tmuxServer) waitDeaths(waiter *tmuxctl.Client) {
	defer s.wg.Done()
	for {
		_, err := waiter.Run(context.Background(), tmuxctl.Command("wait-for", deathChannel))
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

// close ends the orchestrator's clients; the server and its sessions keep
// running.
func (s *tmuxServer) close() {
	close(s.stop)
	s.mu.Lock()
	admin, waiter := s.admin, s.waiter
	s.mu.Unlock()
	// Wake the parked wait-for so the waiter's queue is empty, then close.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	admin.Run(ctx, tmuxctl.Command("wait-for", "-S", deathChannel))
	cancel()
	waiter.Close()
	admin.Close()
	s.wg.Wait()
}

// zombieStatus is zombieStatus on the server's machine: a host's pid is
// read on the host (CONTRACT §23), never in this machine's /proc.
func (s *tmuxServer) zombieStatus(pid int) (int, bool) { return waitCode(s.zombieWait(pid)) }

// zombieWait is zombieWait on the server's machine.
func (s *tmuxServer) zombieWait(pid int) (syscall.WaitStatus, bool) {
	if s.prefix == nil {
		return zombieWait(pid)
	}
	if pid <= 0 {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	argv := tmuxctl.PrefixArgv(s.prefix, true, []string{"cat", "/proc/" + strconv.Itoa(pid) + "/stat"})
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	if err != nil {
		return 0, false
	}
	return parseZombieStat(out)
}
