package node

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/sandbox"
	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/orchestrator/semstore"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/orchestrator/termquery"
	"github.com/termsprawl/termsprawl/orchestrator/textwait"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Node is one terminal: one tmux session, its control client, its mirror.
type Node struct {
	Meta   statefile.NodeMeta
	Env    Env
	Srv    hosts.Server // the shard or host server the session is on
	Client *tmuxctl.Client
	// events and clientDone are the client's notifications and end for
	// this node; link and mirror are set when the client is a host's
	// shared mirror client (remote_mirror.go).
	events     <-chan tmuxctl.Event
	clientDone <-chan struct{}
	link       *hosts.MirrorLink
	mirror     *hosts.Mirror
	Pane       string
	Stream     *tmuxctl.PaneStream
	Scr        *screen.Screen
	Log        *slog.Logger

	reseedReq chan struct{} // capacity 1
	recReq    chan recStart // asks the pump to start recording
	wakeReq   chan chan struct{}
	Quit      chan struct{}
	Done      chan struct{} // closed when pump returns
	quitOnce  sync.Once
	// closing is closed when the node's life is ending (a close began, or
	// its session is gone), before its screen is detached: waiters select
	// on it instead of spinning on a closed screen.
	Closing     chan struct{}
	closingOnce sync.Once
	// closePending: a close began while the node's host was unreachable
	// and waits for the host (the engine's close.go, hostnodes' close.go): listed as
	// closing until the host confirms the end.
	ClosePending atomic.Bool

	// dropUntil is the pane stream position up to which output is already
	// in the mirror (set by a seed); applied is the position of the last
	// byte applied. Only the pump goroutine touches them.
	dropUntil uint64
	applied   uint64
	// trimmedAt is applied at the node's last trim (memory.go). Pump only.
	trimmedAt uint64
	stale     bool // text was logged but not emulated: reseed before use
	// deadSeeds counts the extra seeds of a pane found dead and blank.
	deadSeeds int
	// exitChecks counts the seeds that found a watcher's exit report
	// unconfirmed by tmux (exitcheck.go).
	exitChecks int
	lastSeed   time.Time // when the mirror was last seeded
	// recFrom is the stream position from which output goes to the
	// recording (output before it is in a recorded frame); recCols and
	// recRows the size the recording was last told. Pump only.
	recFrom          uint64
	recCols, recRows int
	// recordOnAttach: attach starts a recording (terminal_launch {record}).
	RecordOnAttach bool

	// convMu orders the writes of the agent's conversation id into the
	// node's kept launch; conversation is the last one written (lost.go).
	ConvMu       sync.Mutex
	Conversation string

	// rec is the recording in progress, nil when the node is not recorded.
	Rec atomic.Pointer[Recording]

	// A node nobody observes sleeps: tmux stops sending its output to us
	// and its emulator is released (see pump and observe). asleep changes
	// only in the pump; observers and lastObserved are set by operations.
	// idleMu orders the pump's decision to sleep (decideSleep) with an
	// observer's check (observe): an observer either keeps the node awake
	// or sees it asleep and wakes it; none is lost in between.
	idleMu       sync.Mutex
	detaching    atomic.Bool // detach paused the pane: its %pause is ours
	Asleep       atomic.Bool
	Observers    atomic.Int32 // waits in progress
	LastObserved atomic.Int64 // unix nanoseconds

	// scanMu guards scans: the text and regex waits the pump evaluates
	// (waitreg.go).
	scanMu sync.Mutex
	scans  []*textwait.Reg

	// stateMu orders the writers of st, the node's published state
	// (nodestate.go); readers load st without a lock.
	stateMu sync.Mutex
	st      atomic.Pointer[State]

	// inputs are kept for echo masking, under their own lock.
	inputs textwait.Inputs

	Mu          sync.Mutex // guards the fields below
	Reseeds     int        // how often the mirror was reseeded (observability)
	seedRev     uint64     // the mirror's revision right after the last seed
	Healed      int        // how often a quiet check found the mirror wrong
	pendingExit *int       // exit reported by requestExit, published after a reseed
	// edgeRev is a revision at which tmux reported the cursor one past the
	// last column (a pending wrap that x/vt does not show, e.g. with
	// autowrap off); the snapshot of that revision reports it as tmux does.
	edgeRev uint64
	// lastRecDir is the directory of the node's latest recording.
	lastRecDir string

	rd readiness // the program's start: input waits for it (ready.go)

	TW termwright // crash report, last input, logs (crash.go)
	// refs are the refs terminal_query handed out (orchestrator/termquery).
	refs termquery.Refs
	// sem holds the program's semantic tree commits (semantic.go).
	Sem semstore.Store
}

func (n *Node) Session() string { return "ts-" + n.Meta.ID }

// BeginClose publishes that the node's life is ending (idempotent); it
// reports whether this call was the one that did.
func (n *Node) BeginClose() bool {
	first := false
	n.closingOnce.Do(func() {
		close(n.Closing)
		first = true
	})
	return first
}

// IsClosing reports whether beginClose ran.
func (n *Node) IsClosing() bool {
	select {
	case <-n.Closing:
		return true
	default:
		return false
	}
}

// recordInput keeps text about to be sent at point pt (the mirror's
// InputPoint just before it is sent), for echo masking.
func (n *Node) recordInput(pt screen.Point, text string) {
	n.inputs.Record(pt.Revision, pt.TextEnd, pt.Prefix, text)
}

// inputsAfter returns the inputs sent at or after revision rev whose
// seq is above seq, and the seq of the last input recorded.
func (n *Node) inputsAfter(rev, seq uint64) ([]textwait.Input, uint64) {
	return n.inputs.After(rev, seq)
}

// Snapshot is the mirror's snapshot, with the cursor as tmux reports it
// at the right edge (see edgeRev).
func (n *Node) Snapshot() screen.Snapshot {
	snap := n.Scr.Snapshot()
	n.Mu.Lock()
	edge := n.edgeRev
	n.Mu.Unlock()
	if edge != 0 && edge == snap.Revision && snap.Cursor.X == snap.Columns-1 {
		snap.Cursor.X = snap.Columns
	}
	return snap
}

// RequestReseed asks the pump to reseed (it coalesces requests).
func (n *Node) RequestReseed() {
	select {
	case n.reseedReq <- struct{}{}:
	default:
	}
}

func (n *Node) Info(clients int) tools.NodeInfo {
	status, code, _, reason := n.ExitState()
	rev, cols, rows := n.Scr.Dims()
	return tools.NodeInfo{ExitReason: reason, TmuxSocket: n.Srv.Socket(), Terminal: n.Meta.ID, Name: n.Meta.Name, Command: n.Meta.Command, Owner: n.Meta.Owner,
		Parent: n.Meta.Parent, Agent: n.Meta.Agent, Status: status, ExitCode: code,
		Columns: cols, Rows: rows, Revision: rev, Clients: clients, Recording: n.recordingStatus(), Host: n.Meta.Host, Crash: n.CrashReport(),
		Sandbox: SandboxName(n.Meta.Sandbox), Since: sinceText(n.Meta.Created)}
}

// sinceText is a node's since for terminal_list before an agent's state
// replaces it: when it was launched (RFC 3339; "" if unknown).
func sinceText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// ErrUnexpectedReply is the cause of a tmux reply of the wrong shape.
var ErrUnexpectedReply = errors.New("unexpected reply from tmux")

// TmuxErr is the error of an operation whose tmux command failed: not
// found when the node is gone, else unavailable with the cause kept.
func (n *Node) TmuxErr(op string, err error) error {
	if _, _, gone := n.State(); gone {
		return n.WithCrash(tools.Errorf(tools.KindNotFound, "terminal %q is gone (its tmux session ended)", n.Meta.ID))
	}
	if err == nil {
		err = ErrUnexpectedReply
	}
	return tools.Errorf(tools.KindUnavailable, "%s on %q: %w", op, n.Meta.ID, err)
}

// SandboxName is a profile as kept and shown: "none" for none or "".
func SandboxName(p string) string {
	if p == "" {
		return string(sandbox.None)
	}
	return p
}

// New is the node of meta on srv, not attached yet (Attach mirrors it).
func New(meta statefile.NodeMeta, srv hosts.Server, env Env, log *slog.Logger) *Node {
	n := &Node{
		Meta:      meta,
		Env:       env,
		Srv:       srv,
		Log:       log,
		reseedReq: make(chan struct{}, 1),
		recReq:    make(chan recStart),
		wakeReq:   make(chan chan struct{}),
		Quit:      make(chan struct{}),
		Done:      make(chan struct{}),
		Closing:   make(chan struct{}),
	}
	n.st.Store(newState(tools.StatusRunning, ""))
	return n
}

// Unmirrored makes a new node a placeholder with no mirror: a blank
// cols×rows screen from revision base, no client, no pump, status with
// reason.
func (n *Node) Unmirrored(cols, rows int, base uint64, status, reason string) {
	n.Scr = screen.NewWithOptions(cols, rows, screen.Options{BaseRevision: base})
	n.st.Store(newState(status, reason))
	close(n.Done)
}
