package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Defaults for Config and launches.
const (
	DefaultSocket   = "termsprawl"
	DefaultMaxNodes = 512
	DefaultColumns  = 120
	DefaultRows     = 40
	nodesDir        = "nodes"
)

// Config configures an Orchestrator.
type Config struct {
	StateDir string // required, already checked with tools.EnsureStateDir
	Socket   string // private tmux server (tmux -L); DefaultSocket
	Tmux     string // tmux binary; "tmux"
	MaxNodes int    // DefaultMaxNodes
	Version  string
	CtlPath  string // absolute path of termsprawlctl, given to agent nodes
	Logger   *slog.Logger
	// IdleAfter is how long a node may go unobserved (no snapshot,
	// capture, wait or input) before it sleeps: tmux stops sending its
	// output to us and its emulator is released. 0 means
	// DefaultIdleAfter; negative means never.
	IdleAfter time.Duration
}

// DefaultIdleAfter is Config.IdleAfter's default.
const DefaultIdleAfter = 30 * time.Second

// Orchestrator owns the nodes of one state dir on one private tmux server.
type Orchestrator struct {
	cfg Config
	srv *tmuxServer
	log *slog.Logger

	mu      sync.Mutex // guards nodes and closing
	nodes   map[string]*node
	closing bool

	procs *procWatcher // nil where pidfds are not available

	// lifecycleMu serialises id allocation and the creation and
	// destruction of sessions (see CloseNode).
	lifecycleMu sync.Mutex
	stop        chan struct{}
	wg          sync.WaitGroup
}

// minimalEnvNames is the environment a node gets in env_mode "replace"
// (plus TERMSPRAWL_* and the launch's own env).
var minimalEnvNames = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR"}

func minimalEnv() []string {
	var env []string
	for _, k := range minimalEnvNames {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// New starts (or adopts) the private tmux server and re-adopts every
// session that carries @termsprawl_node.
func New(ctx context.Context, cfg Config) (*Orchestrator, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("new orchestrator: no state dir")
	}
	if cfg.Socket == "" {
		cfg.Socket = DefaultSocket
	}
	if cfg.Tmux == "" {
		cfg.Tmux = "tmux"
	}
	if cfg.MaxNodes <= 0 {
		cfg.MaxNodes = DefaultMaxNodes
	}
	if cfg.IdleAfter == 0 {
		cfg.IdleAfter = DefaultIdleAfter
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := os.MkdirAll(filepath.Join(cfg.StateDir, nodesDir), 0o700); err != nil {
		return nil, fmt.Errorf("create nodes dir: %w", err)
	}
	srv, err := startTmuxServer(ctx, cfg.Tmux, cfg.Socket, cfg.StateDir, minimalEnv())
	if err != nil {
		return nil, err
	}
	o := &Orchestrator{cfg: cfg, srv: srv, log: cfg.Logger, nodes: map[string]*node{}, stop: make(chan struct{})}
	if pw, err := newProcWatcher(); err == nil {
		o.procs = pw
	} else {
		o.log.Warn("no process watcher; relying on tmux's pane-died hook", "err", err)
	}
	if err := o.adopt(ctx); err != nil {
		o.Close()
		return nil, err
	}
	o.wg.Add(1)
	go o.watchDeaths()
	return o, nil
}

// Socket returns the private tmux server's socket name.
func (o *Orchestrator) Socket() string { return o.cfg.Socket }

// TmuxBin returns the tmux binary the orchestrator uses.
func (o *Orchestrator) TmuxBin() string { return o.cfg.Tmux }

// StateDir returns the state dir.
func (o *Orchestrator) StateDir() string { return o.cfg.StateDir }

// Close stops mirroring: control clients end, the tmux server and every
// session keep running, files stay for the next orchestrator.
func (o *Orchestrator) Close() {
	o.mu.Lock()
	if o.closing {
		o.mu.Unlock()
		return
	}
	o.closing = true
	nodes := make([]*node, 0, len(o.nodes))
	for _, n := range o.nodes {
		nodes = append(nodes, n)
	}
	o.mu.Unlock()
	close(o.stop)
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.detach()
		}()
	}
	wg.Wait()
	if o.procs != nil {
		o.procs.close()
	}
	o.srv.close()
	o.wg.Wait()
}

// detach ends the node's client and pump, leaving the session running.
func (n *node) detach() {
	select {
	case <-n.quit:
	default:
		close(n.quit)
	}
	n.client.Close()
	<-n.done
	n.scr.Close()
}

func (o *Orchestrator) metaPath(id string) string {
	return filepath.Join(o.cfg.StateDir, nodesDir, id+".json")
}

// adopt attaches to every session of ours that tmux still runs, and
// forgets nodes whose session is gone (their tokens die with them).
func (o *Orchestrator) adopt(ctx context.Context) error {
	out, err := o.srv.adminClient().Run(ctx, tmuxctl.Command("list-sessions", "-F", "#{session_name} #{@termsprawl_node}"))
	if err != nil {
		return fmt.Errorf("list sessions: %w", err)
	}
	live := map[string]bool{}
	for _, line := range out {
		name, id, _ := strings.Cut(line, " ")
		if id == "" || name != "ts-"+id || !tools.ValidNodeID(id) {
			continue
		}
		live[id] = true
		meta, err := o.readMeta(id)
		if err != nil {
			o.log.Warn("node metadata unreadable; adopting with defaults", "node", id, "err", err)
			meta = NodeMeta{ID: id, Name: id, Owner: tools.OperatorNode, Created: time.Now()}
			if err := tools.WriteJSONAtomic(o.metaPath(id), meta); err != nil {
				return fmt.Errorf("write node metadata: %w", err)
			}
		}
		if _, err := tools.ReadSession(tools.SessionPath(o.cfg.StateDir, id)); err != nil {
			if err := o.writeSessionFile(meta); err != nil {
				return err
			}
		}
		n := o.newNode(meta)
		if err := n.attach(ctx); err != nil {
			o.log.Warn("cannot adopt node", "node", id, "err", err)
			continue
		}
		o.mu.Lock()
		o.nodes[id] = n
		o.mu.Unlock()
		o.log.Info("adopted node", "node", id)
	}
	// Forget nodes whose sessions are gone.
	files, _ := filepath.Glob(filepath.Join(o.cfg.StateDir, nodesDir, "*.json"))
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".json")
		if !live[id] {
			o.removeFiles(id)
		}
	}
	return nil
}

func (o *Orchestrator) readMeta(id string) (NodeMeta, error) {
	var m NodeMeta
	b, err := os.ReadFile(o.metaPath(id))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("parse %s: %w", o.metaPath(id), err)
	}
	if m.ID != id {
		return m, fmt.Errorf("%s names node %q", o.metaPath(id), m.ID)
	}
	return m, nil
}

func (o *Orchestrator) removeFiles(id string) {
	os.Remove(o.metaPath(id))
	os.Remove(tools.SessionPath(o.cfg.StateDir, id))
}

func (o *Orchestrator) newNode(meta NodeMeta) *node {
	return &node{
		meta:      meta,
		o:         o,
		log:       o.log.With("node", meta.ID),
		reseedReq: make(chan struct{}, 1),
		wakeReq:   make(chan chan struct{}),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
		status:    StatusRunning,
		statusCh:  make(chan struct{}),
	}
}

func (o *Orchestrator) writeSessionFile(meta NodeMeta) error {
	tok, err := tools.NewToken()
	if err != nil {
		return err
	}
	s := tools.Session{Node: meta.ID, Token: tok, Role: tools.RoleAgent, Name: meta.Name,
		Socket: o.cfg.Socket, TmuxSession: "ts-" + meta.ID, Parent: meta.Parent}
	if err := tools.WriteSession(tools.SessionPath(o.cfg.StateDir, meta.ID), s); err != nil {
		return fmt.Errorf("write session file of %s: %w", meta.ID, err)
	}
	return nil
}

// watchDeaths reacts to the pane-died hook: it reads every pane's dead
// flag in one command and updates the nodes.
func (o *Orchestrator) watchDeaths() {
	defer o.wg.Done()
	retry := 0
	for {
		select {
		case <-o.stop:
			return
		case <-o.srv.deaths:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := o.srv.adminClient().Run(ctx, tmuxctl.Command("list-panes", "-a", "-F", "#{session_name} "+deadFormat+" #{pane_pid}"))
		cancel()
		if err != nil {
			o.log.Warn("list panes after a pane died", "err", err)
			continue
		}
		notReady := false
		for _, line := range out {
			o.log.Debug("pane state after a death", "line", line)
			f := strings.Fields(line)
			if len(f) != 3 || !strings.HasPrefix(f[0], "ts-") || !strings.HasPrefix(f[1], "1:") {
				continue
			}
			n := o.node(strings.TrimPrefix(f[0], "ts-"))
			if n == nil {
				continue
			}
			pid, _ := strconv.Atoi(f[2])
			if exited, code := checkDead(f[1], pid); exited {
				if status, _, _ := n.state(); status != StatusExited {
					n.requestExit(code)
				}
				continue
			}
			notReady = true
		}
		if notReady && retry < 8 {
			// The status follows the pty's end shortly: look again.
			retry++
			time.AfterFunc(time.Duration(10<<retry)*time.Millisecond, func() {
				select {
				case o.srv.deaths <- struct{}{}:
				default:
				}
			})
		} else if !notReady {
			retry = 0
		}
	}
}

// zombieStatus reads the exit status of a dead, unreaped process from
// /proc/PID/stat (field 52, in waitpid's encoding). It reports false if
// the process is not a zombie.
func zombieStatus(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 52 is f[49].
	if len(f) < 50 || f[0] != "Z" {
		return 0, false
	}
	ws, err := strconv.Atoi(f[49])
	if err != nil {
		return 0, false
	}
	status := syscall.WaitStatus(ws)
	switch {
	case status.Exited():
		return status.ExitStatus(), true
	case status.Signaled():
		return 128 + int(status.Signal()), true
	}
	return 0, false
}

// clientEnded is called by a node's pump when its control client ended.
func (o *Orchestrator) clientEnded(n *node) {
	o.mu.Lock()
	closing := o.closing
	o.mu.Unlock()
	if closing {
		return
	}
	select {
	case <-n.quit:
		return // closed on purpose
	default:
	}
	n.log.Info("tmux session ended", "reason", n.client.Err())
	n.markGone()
	o.forget(n.meta.ID)
}

// forget drops a node whose session no longer exists, with its files.
func (o *Orchestrator) forget(id string) {
	o.mu.Lock()
	n := o.nodes[id]
	delete(o.nodes, id)
	o.mu.Unlock()
	o.removeFiles(id)
	if n != nil {
		go n.scr.Close()
	}
}

func (o *Orchestrator) node(id string) *node {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.nodes[id]
}

// lookup returns the node or a not_found error naming it.
func (o *Orchestrator) lookup(id string) (*node, error) {
	if n := o.node(id); n != nil {
		return n, nil
	}
	return nil, tools.Errorf(tools.KindNotFound, "no terminal %q: call terminal_list to see the terminals", id)
}

// sortedNodes returns the nodes ordered by creation.
func (o *Orchestrator) sortedNodes() []*node {
	o.mu.Lock()
	out := make([]*node, 0, len(o.nodes))
	for _, n := range o.nodes {
		out = append(out, n)
	}
	o.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].meta.Created.Equal(out[j].meta.Created) {
			return out[i].meta.Created.Before(out[j].meta.Created)
		}
		return out[i].meta.ID < out[j].meta.ID
	})
	return out
}

var slugRE = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// allocateID picks a free node id from the name (or "term"). Call with
// lifecycleMu held.
func (o *Orchestrator) allocateID(name string) string {
	base := strings.Trim(slugRE.ReplaceAllString(name, "-"), "-_")
	if len(base) > 40 {
		base = base[:40]
	}
	taken := func(id string) bool {
		if id == tools.OperatorNode || o.node(id) != nil {
			return true
		}
		_, err := os.Stat(o.metaPath(id))
		return err == nil
	}
	if base != "" && tools.ValidNodeID(base) && !taken(base) {
		return base
	}
	if base == "" || !tools.ValidNodeID(base) {
		base = "term"
	}
	for i := 1; ; i++ {
		id := base + "-" + strconv.Itoa(i)
		if !taken(id) {
			return id
		}
	}
}
