package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/lostnodes"
	"github.com/termsprawl/termsprawl/orchestrator/node"
	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/orchestrator/sandbox"

	"github.com/termsprawl/termsprawl/orchestrator/config"
	"github.com/termsprawl/termsprawl/orchestrator/hostnodes"
	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/launchenv"
	"github.com/termsprawl/termsprawl/orchestrator/memtrim"
	"github.com/termsprawl/termsprawl/orchestrator/proc"
	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// Defaults for Config and launches.
const (
	DefaultMaxNodes = 1024
	DefaultColumns  = 120
	DefaultRows     = 40
	nodesDir        = statefile.NodesDir
)

// Config configures an Orchestrator.
type Config struct {
	StateDir string // required, already checked with tools.EnsureStateDir
	Socket   string // private tmux server (tmux -L); tools.DefaultSocket
	Tmux     string // tmux binary; "tmux"
	MaxNodes int    // DefaultMaxNodes
	Version  string
	CtlPath  string // absolute path of termsprawlctl, given to agent nodes
	Logger   *slog.Logger
	// ShardSize is how many nodes one tmux server holds at most; more
	// nodes start another server. 0 means DefaultShardSize.
	ShardSize int
	// ClientPerNode gives every local node a control client of its own
	// instead of sharing its shard's mirror client (each node's window
	// linked into the shard's hidden mirror session, as on a host):
	// the layout before issue 41, kept for comparison (PERFORMANCE.md).
	ClientPerNode bool
	// LaunchWatch is how long a launch watches its new program for an
	// early exit (reported as NodeInfo.Exited). 0 means
	// DefaultLaunchWatch; negative means not at all.
	LaunchWatch time.Duration
	// IdleAfter is how long a node may go unobserved (no snapshot,
	// capture, wait or input) before it sleeps: tmux stops sending its
	// output to us and its emulator is released. 0 means
	// DefaultIdleAfter; negative means never.
	IdleAfter time.Duration
	// RestAfter is how long an awake node's output may stay quiet before
	// its mirror drops its emulator, keeping the published screen; the
	// next output or screenshot builds it again from tmux (rest.go). 0
	// means DefaultRestAfter; negative means never.
	RestAfter time.Duration
	// MCPAllowOrigins are the Origin values the tool server's /mcp
	// accepts (CONTRACT §15; the engine itself does not use them).
	MCPAllowOrigins []string
	// Notify and NotifyMode are `up --notify` and `--notify-mode`
	// (CONTRACT §20; the tool server's business, like MCPAllowOrigins).
	Notify     []string
	NotifyMode string
	// Hosts are the machines driven over ssh (CONTRACT §17; host.go).
	Hosts []tools.HostSpec
	// RestoreLost is `up --restore`: the tool server restores every lost
	// node once it serves (CONTRACT §25; the engine does not use it).
	RestoreLost bool
	// KeepScreens is how often the last screens of nodes that changed
	// are written to disk, for a restart after a reboot (keepscreen.go).
	// 0 means DefaultKeepScreens; negative means never.
	KeepScreens time.Duration
	// Picker is the shell command the local private servers run in a
	// popup on prefix tools.PickerKey: the dialog picker (popup.go). "": no
	// binding.
	Picker string
	// Settings are <state>/config.toml's, reloaded on change (CONTRACT
	// §28). nil means the defaults (config.Default); Serve opens it.
	Settings *config.Store

	// DetachKey and AnswerKey are the root-table keys of the private
	// servers that detach an attached client and open the picker
	// (CONTRACT §26; config.toml's [keys]). "": tools.DefaultDetachKey,
	// tools.DefaultAnswerKey.
	DetachKey, AnswerKey string

	// hooks, set by the package's tests only, are the engine's test seams
	// from the start (the ones that run while New adopts and connects).
	hooks *hooks
}

// Keys returns the detach and answer keys the private servers bind.
func (o *Orchestrator) Keys() (detach, answer string) {
	return keysOr(o.cfg.DetachKey, o.cfg.AnswerKey)
}

func keysOr(detach, answer string) (string, string) {
	if detach == "" {
		detach = tools.DefaultDetachKey
	}
	if answer == "" {
		answer = tools.DefaultAnswerKey
	}
	return detach, answer
}

// DefaultShardSize is Config.ShardSize's default: the blast radius of a
// tmux crash (measured and chosen in docs/TMUX-CRASHES.md).
const DefaultShardSize = 8

// DefaultLaunchWatch is Config.LaunchWatch's default (CONTRACT §10: an
// exit within 1 s of launch is reported).
const DefaultLaunchWatch = time.Second

// DefaultIdleAfter is Config.IdleAfter's default.
const DefaultIdleAfter = 30 * time.Second

// DefaultRestAfter is Config.RestAfter's default.
const DefaultRestAfter = 5 * time.Second

// Orchestrator owns the nodes of one state dir on one private tmux server.
type Orchestrator struct {
	cfg Config
	// sbProbe is bwrap's last good probe (sandboxglue.go).
	sbProbe sandbox.Prober
	// hooks are the test seams (hooks.go); never nil, empty outside tests.
	hooks *hooks
	log   *slog.Logger
	// output counts the output every pump took in, to return memory to
	// the system after floods (memory.go).
	output memtrim.Meter

	// shards are the private tmux servers, each holding at most
	// cfg.ShardSize nodes, so one tmux crash takes at most that many
	// (docs/TMUX-CRASHES.md), and the placement of new nodes on them
	// (orchestrator/hosts' Shards: the list under its own locks; the
	// engine hands in each server's load, from nodes and reserved).
	shards *hosts.Shards
	deaths chan struct{} // pane deaths on any shard (capacity 1)

	mu      sync.Mutex // guards nodes, closing, onGone, onBorn and launching; taken before lost's
	nodes   map[string]*node.Node
	closing bool
	// lost are the nodes whose tmux server is gone (lost.go;
	// orchestrator/lostnodes, its lock taken after mu); startedFirst: the
	// first shard's server was not running before New.
	lost         *lostnodes.Table
	startedFirst bool
	screensKept  atomic.Int64 // the keeper's writes (keepscreen.go)

	interrupted statefile.Settled      // what adoption did with unfinished submits and closes
	onGone      func(NodeMeta)         // told when a node's life ends (closed or its session gone)
	onBorn      func(NodeMeta)         // told when a node's session file (its token) is written
	onStatus    atomic.Pointer[func()] // told when a node's status changes on its own (OnStatus)

	// launching are the born nodes not yet registered (launchwait.go).
	launching map[string]chan struct{}
	// serverDeaths are the deaths of the private tmux servers, each
	// counted once (ServerHealth).
	serverDeaths hosts.Deaths

	procs *proc.Watcher    // nil where pidfds are not available
	hosts *hostnodes.Hosts // the machines driven over ssh and their nodes (host.go)
	// traces are the recordings opened for reading (trace_open).
	traces *record.Registry
	// renders is the screenshots' memory budget (screenshot.go).
	renders *render.Budget

	// There is no global lifecycle lock: each tmux server has its own
	// (tmuxServer.life) and launches, closes and reattaches on different
	// servers run side by side (lifecycle.go). idMu guards the
	// reservations of launches under way (ids and node slots); the
	// shards' own pick lock picks a launch's shard.
	idMu     sync.Mutex
	reserved map[string]hosts.Server // id → the server it goes on (nil: not chosen yet)
	// ops counts the launches, closes and reattaches under way; Close
	// waits for them (each has its own deadline) after it set closing,
	// and none starts once closing is set (beginOp).
	ops  sync.WaitGroup
	stop chan struct{}
	wg   sync.WaitGroup
}

// New starts (or adopts) the private tmux server and re-adopts every
// session that carries @termsprawl_node.
func New(ctx context.Context, cfg Config) (*Orchestrator, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("new orchestrator: no state dir")
	}
	if cfg.Socket == "" {
		cfg.Socket = tools.DefaultSocket
	}
	if cfg.Tmux == "" {
		cfg.Tmux = "tmux"
	}
	if cfg.MaxNodes <= 0 {
		cfg.MaxNodes = DefaultMaxNodes
	}
	if cfg.LaunchWatch == 0 {
		cfg.LaunchWatch = DefaultLaunchWatch
	}
	if cfg.IdleAfter == 0 {
		cfg.IdleAfter = DefaultIdleAfter
	}
	if cfg.RestAfter == 0 {
		cfg.RestAfter = DefaultRestAfter
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := os.MkdirAll(filepath.Join(cfg.StateDir, nodesDir), 0o700); err != nil {
		return nil, fmt.Errorf("create nodes dir: %w", err)
	}
	if cfg.ShardSize <= 0 {
		cfg.ShardSize = DefaultShardSize
	}
	deaths := make(chan struct{}, 1)
	firstRan := hosts.Running(ctx, cfg.Tmux, cfg.Socket, launchenv.Tmux())
	srv, err := hosts.StartLocal(ctx, cfg.Tmux, cfg.Socket, cfg.StateDir, serverConf(cfg), launchenv.Tmux(), deaths, !cfg.ClientPerNode)
	if err != nil {
		return nil, err
	}
	o := &Orchestrator{cfg: cfg, hooks: cfg.hooks, deaths: deaths, log: cfg.Logger, nodes: map[string]*node.Node{}, lost: lostnodes.New(cfg.StateDir, cfg.Logger), startedFirst: !firstRan, reserved: map[string]hosts.Server{}, stop: make(chan struct{}), traces: record.NewRegistry()}
	if o.hooks == nil {
		o.hooks = &hooks{}
	}
	o.renders = render.NewBudget(ScreenshotMemoryBudget, func(inFlight int64) {
		if h := o.hooks.render; h != nil {
			h(inFlight)
		}
	})
	o.hosts = o.newHosts()
	o.shards = hosts.NewShards(hosts.ShardsConfig{Tmux: cfg.Tmux, Socket: cfg.Socket, StateDir: cfg.StateDir, Conf: serverConf(cfg),
		Env: launchenv.Tmux, Deaths: deaths, Mirror: !cfg.ClientPerNode, Size: cfg.ShardSize, Log: cfg.Logger,
		Reclaimed: func(socket string) {
			if h := o.hooks.reclaimed; h != nil {
				h(socket)
			}
		},
		ListClients: func(shards int) {
			if h := o.hooks.humanClients; h != nil {
				h(shards)
			}
		}}, srv)
	if pw, err := proc.NewWatcher(); err == nil {
		o.procs = pw
	} else {
		o.log.Warn("no process watcher; relying on tmux's pane-died hook", "err", err)
	}
	if err := o.adopt(ctx); err != nil {
		o.Close()
		return nil, err
	}
	if err := o.hosts.Start(ctx, cfg.Hosts); err != nil {
		o.Close()
		return nil, err
	}
	o.finishCloses(ctx)
	o.reclaimShards(ctx) // shards adoption found empty
	o.wg.Add(1)
	go o.watchDeaths()
	if cfg.KeepScreens >= 0 {
		o.wg.Add(1)
		go o.keepScreens(cmp.Or(cfg.KeepScreens, DefaultKeepScreens))
	}
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
	if o.hooks.shutdown != nil {
		o.hooks.shutdown()
	}
	o.output.Stop() // no return of memory after Close (memory.go)
	// Host supervisors adopt sessions: stop them first.
	o.hosts.Set().StopAll()
	o.mu.Lock()
	if o.closing {
		o.mu.Unlock()
		return
	}
	o.closing = true
	o.mu.Unlock()
	// Not while a node is being launched or closed: their steps would run
	// against clients and a server that are going away. Each has its own
	// deadline; no new one starts now (beginOp).
	o.ops.Wait()
	o.mu.Lock()
	nodes := make([]*node.Node, 0, len(o.nodes))
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
			n.Detach()
		}()
	}
	wg.Wait()
	o.traces.CloseAll()
	if o.procs != nil {
		o.procs.Close()
	}
	for _, s := range o.shards.List() {
		s.Close()
	}
	o.hosts.Set().ShutdownAll()
	o.wg.Wait()
}

func (o *Orchestrator) node(id string) *node.Node {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.nodes[id]
}

// lookup returns the node or a not_found error naming it. A node being
// closed is not found any more.
func (o *Orchestrator) lookup(id string) (*node.Node, error) {
	return o.lookupFor(id, false)
}

// lookupFor is lookup; forClose also finds a local node that is listed
// unattached (adopt.go), which only a close can act on.
func (o *Orchestrator) lookupFor(id string, forClose bool) (*node.Node, error) {
	if n := o.node(id); n != nil && !n.IsClosing() {
		if forClose && n.Meta.Host == "" {
			return n, nil
		}
		if err := n.Reachable(); err != nil {
			return nil, err
		}
		return n, nil
	}
	if err := o.LostError(id); err != nil {
		return nil, err
	}
	return nil, tools.Errorf(tools.KindNotFound, "no terminal %q: call terminal_list to see the terminals", id)
}

// sortedNodes returns the nodes ordered by creation.
func (o *Orchestrator) sortedNodes() []*node.Node {
	o.mu.Lock()
	out := make([]*node.Node, 0, len(o.nodes))
	for _, n := range o.nodes {
		out = append(out, n)
	}
	o.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Meta.Created.Equal(out[j].Meta.Created) {
			return out[i].Meta.Created.Before(out[j].Meta.Created)
		}
		return out[i].Meta.ID < out[j].Meta.ID
	})
	return out
}

// NodeMeta is what the orchestrator keeps about a node on disk
// (<state>/nodes/<id>.json; statefile.NodeMeta).
type NodeMeta = statefile.NodeMeta
