package hosts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/tmuxctl"
)

// Placement: nodes are spread over this machine's private tmux servers of
// at most ShardsConfig.Size nodes each (`termsprawl`, `termsprawl-2`, …),
// so a tmux 3.3a crash takes at most that many (docs/TMUX-CRASHES.md).
// Shards is the list of those servers and the choice of one for a new
// node; the nodes themselves are the engine's, which hands in how many
// each server holds (its nodes and the launches under way that chose it)
// as a Load.

// ShardsConfig is what the shards are started with.
type ShardsConfig struct {
	Tmux     string          // tmux binary
	Socket   string          // the first shard's socket; SOCKET-2, SOCKET-3, … after it
	StateDir string          // the state dir (the servers' files)
	Conf     string          // the servers' configuration (Conf and the keys)
	Env      func() []string // the environment of the tmux commands (read at each)
	Deaths   chan struct{}
	Mirror   bool // the nodes share their shard's mirror client
	Size     int  // nodes per shard at most
	Log      *slog.Logger
	// Reclaimed is told each shard socket reclaimed; ListClients runs as
	// each shard's list-clients starts, with the number of shards asked.
	// Both are the engine's test seams (nil outside tests).
	Reclaimed   func(socket string)
	ListClients func(shards int)
}

// Load counts a server's nodes and the launches under way that chose it.
type Load = map[Server]int

// Shards are this machine's tmux servers for nodes. Lock order: pick →
// (the engine's locks, in the Load it hands in) ; mu is a leaf.
type Shards struct {
	cfg ShardsConfig
	// pick is a placement's turn: a launch's choice of shard, the start of
	// a new one, and the end of an empty one (Reclaim), one at a time, so
	// two launches see each other's choice and a new shard never reuses
	// the socket of one still going away.
	pick sync.Mutex
	mu   sync.Mutex // guards list
	list []*Tmux
	// clients is each shard's last list of human clients.
}

// NewShards starts the shards with first, the first shard's server.
func NewShards(cfg ShardsConfig, first *Tmux) *Shards {
	return &Shards{cfg: cfg, list: []*Tmux{first}}
}

// List returns the shards; the first is cfg.Socket's.
func (s *Shards) List() []*Tmux {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Tmux(nil), s.list...)
}

// Get returns the shard of socket, or nil.
func (s *Shards) Get(socket string) *Tmux {
	for _, t := range s.List() {
		if t.Socket() == socket {
			return t
		}
	}
	return nil
}

// socket names the k-th shard's socket (k ≥ 1): the configured socket
// for the first, SOCKET-2, SOCKET-3, … after it.
func (s *Shards) socket(k int) string {
	if k <= 1 {
		return s.cfg.Socket
	}
	return fmt.Sprintf("%s-%d", s.cfg.Socket, k)
}

// Place picks the shard a new node goes on: the first with room
// (counting the launches under way, as load counts them), else a new one;
// chosen records the choice (the launch's reservation) before another
// placement may count.
func (s *Shards) Place(ctx context.Context, load func() Load, chosen func(*Tmux)) (*Tmux, error) {
	s.pick.Lock()
	defer s.pick.Unlock()
	count := load()
	shards := s.List()
	used := map[string]bool{}
	for _, t := range shards {
		used[t.Socket()] = true
		if count[t] < s.cfg.Size {
			chosen(t)
			return t, nil
		}
	}
	k := 1
	for used[s.socket(k)] {
		k++
	}
	t, err := s.Add(ctx, s.socket(k))
	if err != nil {
		return nil, err
	}
	chosen(t)
	return t, nil
}

// Add starts (or connects to) the server of socket and adds it.
func (s *Shards) Add(ctx context.Context, socket string) (*Tmux, error) {
	t, err := StartLocal(ctx, s.cfg.Tmux, socket, s.cfg.StateDir, s.cfg.Conf, s.cfg.Env(), s.cfg.Deaths, s.cfg.Mirror)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.list = append(s.list, t)
	s.mu.Unlock()
	s.cfg.Log.Info("tmux shard started", "socket", socket)
	return t, nil
}

// Connect connects to every shard that runs besides those known: the
// sockets named (the nodes' metadata says) and those named SOCKET-N in
// tmux's socket directory, in the order of their names.
func (s *Shards) Connect(ctx context.Context, named []string) error {
	sockets := map[string]bool{}
	for _, n := range named {
		sockets[n] = true
	}
	found, _ := filepath.Glob(filepath.Join(SocketDir(), s.cfg.Socket+"-[0-9]*"))
	for _, p := range found {
		sockets[filepath.Base(p)] = true
	}
	names := make([]string, 0, len(sockets))
	for n := range sockets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, socket := range names {
		if s.Get(socket) != nil || !Running(ctx, s.cfg.Tmux, socket, s.cfg.Env()) {
			continue
		}
		if _, err := s.Add(ctx, socket); err != nil {
			return fmt.Errorf("connect to tmux shard %s: %w", socket, err)
		}
	}
	return nil
}

// SocketDir is where tmux keeps the sockets of `tmux -L NAME`.
func SocketDir() string {
	dir := os.Getenv("TMUX_TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	return filepath.Join(dir, fmt.Sprintf("tmux-%d", os.Getuid()))
}

// reclaimWait bounds how long a reclaimed shard's server takes to exit.
const reclaimWait = 5 * time.Second

// Reclaim lets every shard but the first that holds no node and no
// launch under way exit (load is false once the engine is closing): our
// clients leave it first (tmux 3.3a's crash traps: no control client of
// ours is attached when a pane dies), then its admin session's `sleep
// infinity` ends with remain-on-exit off, tmux destroys the last session
// and exit-empty ends the server. It holds pick, so no launch picks the
// shard meanwhile.
func (s *Shards) Reclaim(ctx context.Context, load func() (Load, bool)) {
	s.pick.Lock()
	defer s.pick.Unlock()
	count, ok := load()
	if !ok {
		return
	}
	var empty []*Tmux
	s.mu.Lock()
	kept := s.list[:1:1]
	for _, t := range s.list[1:] {
		if count[t] == 0 {
			empty = append(empty, t)
		} else {
			kept = append(kept, t)
		}
	}
	s.list = kept
	s.mu.Unlock()
	for _, t := range empty {
		s.end(ctx, t)
	}
}

// end ends an empty shard's server (see Reclaim): the programs of its
// hidden sessions (admin, and the mirror session of a shared server) are
// ended once our clients have left.
func (s *Shards) end(ctx context.Context, t *Tmux) {
	socket := t.Socket()
	var pids []int
	if admin := t.Admin(); admin != nil {
		if out, err := admin.Run(ctx, tmuxctl.Command("list-panes", "-a", "-F", "#{session_name} #{window_name} #{pane_pid} #{pane_id}")); err == nil {
			for _, line := range out {
				f := strings.Fields(line)
				if len(f) != 4 {
					continue
				}
				name := f[0]
				// The mirror session's own window, never a node's linked
				// into it.
				if name != AdminSession && (name != MirrorSession || f[1] != MirrorSession) {
					continue
				}
				if pid, _ := strconv.Atoi(f[2]); pid > 0 {
					pids = append(pids, pid)
				}
				admin.Run(ctx, tmuxctl.Command("set-option", "-p", "-t", f[3], "remain-on-exit", "off"))
			}
		}
	}
	t.Close() // our clients leave first
	if len(pids) == 0 {
		s.cfg.Log.Warn("empty tmux shard kept: its admin session's pid is unknown", "socket", socket)
		return
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		for _, pid := range pids {
			syscall.Kill(pid, sig)
		}
		deadline := time.Now().Add(reclaimWait / 2)
		for time.Now().Before(deadline) {
			if !Running(ctx, s.cfg.Tmux, socket, s.cfg.Env()) {
				s.cfg.Log.Info("empty tmux shard ended", "socket", socket)
				if s.cfg.Reclaimed != nil {
					s.cfg.Reclaimed(socket)
				}
				return
			}
			if !Pause(ctx, 20*time.Millisecond) {
				return
			}
		}
	}
	s.cfg.Log.Warn("empty tmux shard did not exit", "socket", socket)
}

// HumanClients returns the tty names of the clients attached to each
// shard, control clients (ours) excluded, per session name. A shard's
// answer is kept while its admin client hears of no client change
// (Tmux.ClientsGen), so a list at 1,000 nodes (125 shards) asks only the
// shards whose clients changed; those are asked side by side
// (docs/PERFORMANCE.md, "200 nodes" and "1,000 nodes").
func (s *Shards) HumanClients(ctx context.Context) map[Server]map[string][]string {
	srvs := s.List()
	found := make([]map[string][]string, len(srvs))
	var wg sync.WaitGroup
	for i, srv := range srvs {
		gen := srv.ClientsGen()
		if m, ok := srv.keptHumans(gen); ok {
			found[i] = m
			continue
		}
		wg.Go(func() {
			if s.cfg.ListClients != nil {
				s.cfg.ListClients(len(srvs))
			}
			out, err := srv.Admin().Run(ctx, tmuxctl.Command("list-clients", "-F", "#{session_name} #{client_control_mode} #{client_name}"))
			if err != nil {
				return
			}
			m := map[string][]string{}
			for _, line := range out {
				f := strings.SplitN(line, " ", 3)
				if len(f) == 3 && f[1] != "1" {
					m[f[0]] = append(m[f[0]], f[2])
				}
			}
			found[i] = m
			srv.keepHumans(gen, m)
		})
	}
	wg.Wait()
	res := make(map[Server]map[string][]string, len(srvs))
	for i, srv := range srvs {
		if found[i] != nil {
			res[srv] = found[i]
		}
	}
	return res
}

// Tell shows text (one line, formats escaped) for delayMS on the status
// line of every human client attached to a shard, with display-message
// only (never a prompt, which would block a control client's queue in
// tmux 3.3a), and returns how many were told and the first error.
func (s *Shards) Tell(ctx context.Context, text string, delayMS int) (int, error) {
	told := 0
	var firstErr error
	for srv, sessions := range s.HumanClients(ctx) {
		for _, names := range sessions {
			for _, c := range names {
				cmd := tmuxctl.Command("display-message", "-c", c, "-d", strconv.Itoa(delayMS), text)
				if _, err := srv.Admin().Run(ctx, cmd); err != nil {
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				told++
			}
		}
	}
	return told, firstErr
}

// Switch switches every human client attached to srv to session (a
// client can switch only to a session of its own server) and counts the
// humans attached to the other shards.
func (s *Shards) Switch(ctx context.Context, srv Server, session string) (switched []string, elsewhere int) {
	for on, sessions := range s.HumanClients(ctx) {
		for _, names := range sessions {
			if on != srv {
				elsewhere += len(names)
				continue
			}
			for _, c := range names {
				if _, err := srv.Admin().Run(ctx, tmuxctl.Command("switch-client", "-c", c, "-t", "="+session)); err == nil {
					switched = append(switched, c)
				}
			}
		}
	}
	return switched, elsewhere
}

// WriteTerminals hands seq to write once for the tty of every human client
// attached to a shard (tmux's client_tty; a client whose name is not a
// /dev path is left out) and returns how many got it and every error.
func (s *Shards) WriteTerminals(ctx context.Context, seq []byte, write func(tty string, seq []byte) error) (int, error) {
	told := 0
	var errs []error
	seen := map[string]bool{}
	for _, sessions := range s.HumanClients(ctx) {
		for _, names := range sessions {
			for _, tty := range names {
				if seen[tty] || !strings.HasPrefix(tty, "/dev/") {
					continue
				}
				seen[tty] = true
				if err := write(tty, seq); err != nil {
					errs = append(errs, err)
					continue
				}
				told++
			}
		}
	}
	return told, errors.Join(errs...)
}
