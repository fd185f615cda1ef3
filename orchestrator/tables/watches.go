package tables

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// Watches are waits that outlive one request: watch_start arms one,
// watch_wait reads it (bounded waits, again and again), watch_cancel
// drops it. Live ones survive a restart (they wait again from the
// node's current revision), fired ones wait to be read for firedWatchTTL.

// WatchLifetime bounds how long a watch waits before it gives up.
const WatchLifetime = 24 * time.Hour

// firedWatchTTL is how long a fired watch's result waits to be read.
const firedWatchTTL = 10 * time.Minute

// The watches' quotas.
const (
	// MaxWatchesPerNode bounds the live watches one node started; the
	// operator, one human for every node, has MaxWatchesOperator.
	MaxWatchesPerNode  = 32
	MaxWatchesOperator = 256
	// MaxWatches bounds all live watches together.
	MaxWatches = 4096
)

// WatchesFile is the watch table's file under Dir.
const WatchesFile = "watches.json"

// Wait is a wait armed on a node (the engine's PendingWait): Run waits
// until it fires, the node goes, or ctx ends.
type Wait interface {
	Run(ctx context.Context) (tools.WaitResult, error)
}

// PrepareWait arms a wait on a terminal from its current revision (the
// revision it waits after is returned with it).
type PrepareWait func(terminal string, spec tools.WaitSpec, lifetime time.Duration) (Wait, uint64, error)

type watch struct {
	id, terminal string
	owner        tools.Identity // who started it
	spec         tools.WaitSpec // what it waits for (the monitor shows it, the table on disk keeps it)
	after        uint64
	started      time.Time
	cancel       context.CancelFunc
	done         chan struct{} // closed when the wait ended; then result and err are set
	result       tools.WaitResult
	err          error
	interrupted  bool // the wait ended because the server shut down
}

// Watches is the watch table. Its waits run until they end or ctx (the
// server's, given to NewWatches) ends.
type Watches struct {
	ctx   context.Context // the server's: a shutdown ends every wait and leaves it live on disk
	mu    sync.Mutex      // guards next and m
	next  int
	m     map[string]*watch
	store *Store
	disk  *Persister // watches.json: every change synced
}

// NewWatches is an empty watch table written into st; its waits end at
// the latest when ctx does.
func NewWatches(ctx context.Context, st *Store) *Watches {
	w := &Watches{ctx: ctx, m: map[string]*watch{}, store: st}
	w.disk = NewPersister(st, WatchesFile, w.snapshot)
	return w
}

// Persister is the table's file writer (Close ends it; tests gate it).
func (w *Watches) Persister() *Persister { return w.disk }

// watchOnDisk is one watch in watches.json.
type watchOnDisk struct {
	ID          string            `json:"watch"`
	Terminal    string            `json:"terminal"`
	OwnerNode   string            `json:"owner_node"`
	OwnerRole   string            `json:"owner_role"`
	Incarnation string            `json:"incarnation"`
	Spec        tools.WaitSpec    `json:"spec"`
	After       uint64            `json:"after"`
	Started     time.Time         `json:"started"`
	Result      *tools.WaitResult `json:"result,omitempty"` // set once it fired
	ErrKind     tools.Kind        `json:"err_kind,omitempty"`
	ErrMsg      string            `json:"err,omitempty"`
}

type watchesOnDisk struct {
	Next    int           `json:"next"`
	Watches []watchOnDisk `json:"watches"`
}

// snapshot is watches.json's content (the persister's, under w.mu). A
// watch whose wait is still running is saved as live; one that ended,
// with its outcome.
func (w *Watches) snapshot() ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := watchesOnDisk{Next: w.next, Watches: make([]watchOnDisk, 0, len(w.m))}
	for _, wt := range w.m {
		r := watchOnDisk{ID: wt.id, Terminal: wt.terminal, OwnerNode: wt.owner.Node, OwnerRole: wt.owner.Role,
			Incarnation: wt.owner.Incarnation, Spec: wt.spec, After: wt.after, Started: wt.started}
		select {
		case <-wt.done:
			if wt.interrupted {
				break // ended by the shutdown: live for the next orchestrator
			}
			if wt.err != nil {
				r.ErrKind, r.ErrMsg = tools.KindOf(wt.err), wt.err.Error()
			}
			res := wt.result
			r.Result = &res
		default:
		}
		d.Watches = append(d.Watches, r)
	}
	return Marshal(WatchesFile, d)
}

// Restore starts again the live watches of live incarnations (armed by
// prepare) and keeps the fired ones for watch_wait.
func (w *Watches) Restore(live map[string]bool, prepare PrepareWait, log *slog.Logger) error {
	var d watchesOnDisk
	if err := w.store.Load(WatchesFile, &d); err != nil {
		return err
	}
	w.mu.Lock()
	w.next = max(w.next, d.Next)
	w.mu.Unlock()
	for _, r := range d.Watches {
		if !live[r.Incarnation] || r.ID == "" {
			continue
		}
		owner := tools.Identity{Node: r.OwnerNode, Role: r.OwnerRole, Incarnation: r.Incarnation}
		wt := &watch{id: r.ID, terminal: r.Terminal, owner: owner, spec: r.Spec, after: r.After, started: r.Started, done: make(chan struct{})}
		if r.Result != nil || r.ErrMsg != "" {
			wt.cancel = func() {}
			if r.Result != nil {
				wt.result = *r.Result
			}
			if r.ErrMsg != "" {
				wt.err = tools.Errorf(r.ErrKind, "%s", r.ErrMsg)
			}
			close(wt.done)
			w.mu.Lock()
			w.m[r.ID] = wt
			w.mu.Unlock()
			time.AfterFunc(firedWatchTTL, func() { w.remove(r.ID) })
			continue
		}
		// The mirror of the node starts a new epoch of revisions after
		// a restart, and the history before it is gone: the restored
		// watch waits from the current revision (docs/CHOICES.md).
		spec := r.Spec
		spec.After = nil
		lifetime := max(WatchLifetime-time.Since(r.Started), time.Second)
		pw, after, err := prepare(r.Terminal, spec, lifetime)
		if err != nil {
			log.Warn("restore watch", "watch", r.ID, "err", err)
			continue
		}
		wt.after = after
		w.mu.Lock()
		w.m[r.ID] = wt
		w.mu.Unlock()
		w.run(wt, pw)
	}
	_ = w.disk.Sync(w.ctx) // a failure is logged (Persister)
	return nil
}

// run starts the watch's goroutine. It ends when the wait does: it fires,
// the node goes, the watch is cancelled or the server closes (w.ctx).
func (w *Watches) run(wt *watch, pw Wait) {
	ctx := w.ctx
	wctx, cancel := context.WithCancel(ctx)
	wt.cancel = cancel
	go func() {
		result, err := pw.Run(wctx)
		w.mu.Lock()
		wt.result, wt.err = result, err
		wt.interrupted = ctx.Err() != nil
		close(wt.done)
		interrupted := wt.interrupted
		w.mu.Unlock()
		if !interrupted {
			// Not a shutdown: the outcome goes to disk. (At shutdown
			// the watch stays live on disk and restarts with the
			// next orchestrator.)
			_ = w.disk.Sync(context.Background())
		}
		// A fired watch nobody reads is dropped after a while, so
		// forgotten watches do not fill the table.
		time.AfterFunc(firedWatchTTL, func() { w.remove(wt.id) })
	}()
}

// Start arms a watch of caller on terminal: pw waits after revision
// after. It is on disk before its id is handed out.
func (w *Watches) Start(ctx context.Context, caller tools.Identity, terminal string, spec tools.WaitSpec, pw Wait, after uint64) (tools.WatchStarted, error) {
	limit := MaxWatchesPerNode
	if caller.Role == tools.RoleOperator {
		limit = MaxWatchesOperator
	}
	w.mu.Lock()
	mine := 0
	for _, wt := range w.m {
		if wt.owner.Incarnation == caller.Incarnation {
			mine++
		}
	}
	if mine >= limit {
		w.mu.Unlock()
		return tools.WatchStarted{}, quotaErr("watches", limit, "node %q has %d watches (the limit is %d): cancel some with watch_cancel or read them with watch_wait", caller.Node, mine, limit)
	}
	if len(w.m) >= MaxWatches {
		w.mu.Unlock()
		return tools.WatchStarted{}, quotaErr("watches", MaxWatches, "%d watches are live, the most the orchestrator keeps: cancel some with watch_cancel", len(w.m))
	}
	w.next++
	id := fmt.Sprintf("watch-%d", w.next)
	wt := &watch{id: id, terminal: terminal, owner: caller, spec: spec, after: after, started: time.Now().UTC(), done: make(chan struct{})}
	w.run(wt, pw)
	w.m[id] = wt
	w.mu.Unlock()
	// The watch is on disk before its id is handed out; a failure is
	// logged and the watch runs (as a write that failed always did).
	_ = w.disk.Sync(ctx)
	return tools.WatchStarted{Watch: id, Terminal: terminal, After: after}, nil
}

// quotaErr is the refusal of a quota (the tool server's words).
func quotaErr(quota string, limit int, format string, a ...any) error {
	return tools.Errorf(tools.KindRejected, "quota: "+format, a...).
		WithDetails("quota", quota).WithDetails("limit", limit)
}

// get returns a watch its caller may use: its owner's, or any for the
// operator.
func (w *Watches) get(caller tools.Identity, id string) (*watch, error) {
	w.mu.Lock()
	wt := w.m[id]
	w.mu.Unlock()
	if wt == nil {
		return nil, tools.Errorf(tools.KindNotFound, "no watch %q (it fired and was read, expired, was cancelled, or never existed)", id)
	}
	if caller.Role != tools.RoleOperator && wt.owner.Incarnation != caller.Incarnation {
		return nil, tools.Errorf(tools.KindForbidden, "watch %q belongs to node %q", id, wt.owner.Node)
	}
	return wt, nil
}

func (w *Watches) remove(id string) {
	w.mu.Lock()
	_, ok := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ok {
		_ = w.disk.Sync(context.Background())
	}
}

// Wait waits up to timeout for caller's watch id to fire; a fired watch
// is read once (then dropped).
func (w *Watches) Wait(ctx context.Context, caller tools.Identity, id string, timeout time.Duration) (tools.WatchFired, error) {
	wt, err := w.get(caller, id)
	if err != nil {
		return tools.WatchFired{}, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-wt.done:
		w.remove(id)
		if wt.err != nil {
			return tools.WatchFired{}, wt.err
		}
		return tools.WatchFired{Watch: id, Fired: wt.result.Matched, Result: wt.result}, nil
	case <-t.C:
		return tools.WatchFired{}, tools.Errorf(tools.KindTimeout, "watch %q has not fired yet: call watch_wait again", id)
	case <-ctx.Done():
		return tools.WatchFired{}, tools.Errorf(tools.KindTimeout, "watch_wait cancelled: %w", ctx.Err())
	}
}

// Cancel drops caller's watch id; one that is not there is no error.
func (w *Watches) Cancel(caller tools.Identity, id string) (tools.WatchCancelled, error) {
	wt, err := w.get(caller, id)
	if err != nil {
		if tools.KindOf(err) == tools.KindNotFound {
			return tools.WatchCancelled{Watch: id}, nil
		}
		return tools.WatchCancelled{}, err
	}
	w.remove(id)
	wt.cancel()
	return tools.WatchCancelled{Watch: id, Cancelled: true}, nil
}

// Forget cancels and drops the watches an incarnation started.
func (w *Watches) Forget(incarnation string) {
	w.mu.Lock()
	for id, wt := range w.m {
		if wt.owner.Incarnation == incarnation {
			wt.cancel()
			delete(w.m, id)
		}
	}
	w.mu.Unlock()
	_ = w.disk.Sync(context.Background())
}

// WatchInfo is one watch as the monitor lists it.
type WatchInfo struct {
	ID, Terminal string
	Owner        string // the node that started it
	Spec         tools.WaitSpec
	Fired        bool
}

// List lists the watches, oldest first.
func (w *Watches) List() []WatchInfo {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]WatchInfo, 0, len(w.m))
	for _, wt := range w.m {
		fired := false
		select {
		case <-wt.done:
			fired = true
		default:
		}
		out = append(out, WatchInfo{ID: wt.id, Terminal: wt.terminal, Owner: wt.owner.Node, Spec: wt.spec, Fired: fired})
	}
	// Ids are watch-N: order by N.
	num := func(id string) int {
		n, _ := strconv.Atoi(strings.TrimPrefix(id, "watch-"))
		return n
	}
	slices.SortFunc(out, func(a, b WatchInfo) int { return num(a.ID) - num(b.ID) })
	return out
}
