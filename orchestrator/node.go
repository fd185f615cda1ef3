package orchestrator

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

// NodeMeta is what the orchestrator keeps about a node on disk
// (<state>/nodes/<id>.json; statefile.NodeMeta).
type NodeMeta = statefile.NodeMeta

// node is one terminal: one tmux session, its control client, its mirror.
type node struct {
	meta   NodeMeta
	env    Env
	srv    hosts.Server // the shard or host server the session is on
	client *tmuxctl.Client
	// events and clientDone are the client's notifications and end for
	// this node; link and mirror are set when the client is a host's
	// shared mirror client (remote_mirror.go).
	events     <-chan tmuxctl.Event
	clientDone <-chan struct{}
	link       *hosts.MirrorLink
	mirror     *hosts.Mirror
	pane       string
	stream     *tmuxctl.PaneStream
	scr        *screen.Screen
	log        *slog.Logger

	reseedReq chan struct{} // capacity 1
	recReq    chan recStart // asks the pump to start recording
	wakeReq   chan chan struct{}
	quit      chan struct{}
	done      chan struct{} // closed when pump returns
	quitOnce  sync.Once
	// closing is closed when the node's life is ending (a close began, or
	// its session is gone), before its screen is detached: waiters select
	// on it instead of spinning on a closed screen.
	closing     chan struct{}
	closingOnce sync.Once
	// closePending: a close began while the node's host was unreachable
	// and waits for the host (close.go, remote_close.go): listed as
	// closing until the host confirms the end.
	closePending atomic.Bool

	// dropUntil is the pane stream position up to which output is already
	// in the mirror (set by a seed); applied is the position of the last
	// byte applied. Only the pump goroutine touches them.
	dropUntil uint64
	applied   uint64
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
	recordOnAttach bool

	// convMu orders the writes of the agent's conversation id into the
	// node's kept launch; conversation is the last one written (lost.go).
	convMu       sync.Mutex
	conversation string

	// rec is the recording in progress, nil when the node is not recorded.
	rec atomic.Pointer[recording]

	// A node nobody observes sleeps: tmux stops sending its output to us
	// and its emulator is released (see pump and observe). asleep changes
	// only in the pump; observers and lastObserved are set by operations.
	// idleMu orders the pump's decision to sleep (decideSleep) with an
	// observer's check (observe): an observer either keeps the node awake
	// or sees it asleep and wakes it; none is lost in between.
	idleMu       sync.Mutex
	detaching    atomic.Bool // detach paused the pane: its %pause is ours
	asleep       atomic.Bool
	observers    atomic.Int32 // waits in progress
	lastObserved atomic.Int64 // unix nanoseconds

	// scanMu guards scans: the text and regex waits the pump evaluates
	// (waitreg.go).
	scanMu sync.Mutex
	scans  []*textwait.Reg

	// stateMu orders the writers of st, the node's published state
	// (nodestate.go); readers load st without a lock.
	stateMu sync.Mutex
	st      atomic.Pointer[nodeState]

	// inputs are kept for echo masking, under their own lock.
	inputs textwait.Inputs

	mu          sync.Mutex // guards the fields below
	reseeds     int        // how often the mirror was reseeded (observability)
	seedRev     uint64     // the mirror's revision right after the last seed
	healed      int        // how often a quiet check found the mirror wrong
	pendingExit *int       // exit reported by requestExit, published after a reseed
	// edgeRev is a revision at which tmux reported the cursor one past the
	// last column (a pending wrap that x/vt does not show, e.g. with
	// autowrap off); the snapshot of that revision reports it as tmux does.
	edgeRev uint64
	// lastRecDir is the directory of the node's latest recording.
	lastRecDir string

	rd readiness // the program's start: input waits for it (ready.go)

	tw termwright // crash report, last input, logs (crash.go)
	// refs are the refs terminal_query handed out (orchestrator/termquery).
	refs termquery.Refs
	// sem holds the program's semantic tree commits (semantic.go).
	sem semstore.Store
}

func (n *node) session() string { return "ts-" + n.meta.ID }

// beginClose publishes that the node's life is ending (idempotent); it
// reports whether this call was the one that did.
func (n *node) beginClose() bool {
	first := false
	n.closingOnce.Do(func() {
		close(n.closing)
		first = true
	})
	return first
}

// isClosing reports whether beginClose ran.
func (n *node) isClosing() bool {
	select {
	case <-n.closing:
		return true
	default:
		return false
	}
}

// recordInput keeps text about to be sent at point pt (the mirror's
// InputPoint just before it is sent), for echo masking.
func (n *node) recordInput(pt screen.Point, text string) {
	n.inputs.Record(pt.Revision, pt.TextEnd, pt.Prefix, text)
}

// inputsAfter returns the inputs sent at or after revision rev whose
// seq is above seq, and the seq of the last input recorded.
func (n *node) inputsAfter(rev, seq uint64) ([]textwait.Input, uint64) {
	return n.inputs.After(rev, seq)
}

// snapshot is the mirror's snapshot, with the cursor as tmux reports it
// at the right edge (see edgeRev).
func (n *node) snapshot() screen.Snapshot {
	snap := n.scr.Snapshot()
	n.mu.Lock()
	edge := n.edgeRev
	n.mu.Unlock()
	if edge != 0 && edge == snap.Revision && snap.Cursor.X == snap.Columns-1 {
		snap.Cursor.X = snap.Columns
	}
	return snap
}

// requestReseed asks the pump to reseed (it coalesces requests).
func (n *node) requestReseed() {
	select {
	case n.reseedReq <- struct{}{}:
	default:
	}
}

func (n *node) info(clients int) tools.NodeInfo {
	status, code, _, reason := n.exitState()
	snap := n.snapshot()
	return tools.NodeInfo{ExitReason: reason, TmuxSocket: n.srv.Socket(), Terminal: n.meta.ID, Name: n.meta.Name, Command: n.meta.Command, Owner: n.meta.Owner,
		Parent: n.meta.Parent, Agent: n.meta.Agent, Status: status, ExitCode: code,
		Columns: snap.Columns, Rows: snap.Rows, Revision: snap.Revision, Clients: clients, Recording: n.recordingStatus(), Host: n.meta.Host, Crash: n.crashReport(),
		Sandbox: sandboxName(n.meta.Sandbox), Since: sinceText(n.meta.Created)}
}

// sinceText is a node's since for terminal_list before an agent's state
// replaces it: when it was launched (RFC 3339; "" if unknown).
func sinceText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// errUnexpectedReply is the cause of a tmux reply of the wrong shape.
var errUnexpectedReply = errors.New("unexpected reply from tmux")

// tmuxErr is the error of an operation whose tmux command failed: not
// found when the node is gone, else unavailable with the cause kept.
func (n *node) tmuxErr(op string, err error) error {
	if _, _, gone := n.state(); gone {
		return n.withCrash(tools.Errorf(tools.KindNotFound, "terminal %q is gone (its tmux session ended)", n.meta.ID))
	}
	if err == nil {
		err = errUnexpectedReply
	}
	return tools.Errorf(tools.KindUnavailable, "%s on %q: %w", op, n.meta.ID, err)
}

// sandboxName is a profile as kept and shown: "none" for none or "".
func sandboxName(p string) string {
	if p == "" {
		return string(sandbox.None)
	}
	return p
}
