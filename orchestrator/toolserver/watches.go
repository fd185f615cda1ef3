package toolserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/tables"
	"github.com/termsprawl/termsprawl/tools"
)

// Watches are waits that outlive one request.

// watchLifetime bounds how long a watch waits before it gives up.
const watchLifetime = 24 * time.Hour

// firedWatchTTL is how long a fired watch's result waits to be read.
const firedWatchTTL = 10 * time.Minute

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

type watchTable struct {
	mu    sync.Mutex // guards next and m
	next  int
	m     map[string]*watch
	store *tables.Store
	disk  *tables.Persister // watches.json (persist.go): every change synced
}

func newWatchTable(st *tables.Store) *watchTable {
	w := &watchTable{m: map[string]*watch{}, store: st}
	w.disk = tables.NewPersister(st, watchesFile, w.snapshot)
	return w
}

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
func (w *watchTable) snapshot() ([]byte, error) {
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
	return tables.Marshal(watchesFile, d)
}

// restoreWatches starts again the live watches of live incarnations and
// keeps the fired ones for watch_wait.
func (s *Server) restoreWatches(live map[string]bool) error {
	w := s.watches
	var d watchesOnDisk
	if err := w.store.Load(watchesFile, &d); err != nil {
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
		lifetime := max(watchLifetime-time.Since(r.Started), time.Second)
		pw, err := s.eng.watches.PrepareWait(r.Terminal, spec, lifetime)
		if err != nil {
			s.log.Warn("restore watch", "watch", r.ID, "err", err)
			continue
		}
		wt.after = pw.After
		w.mu.Lock()
		w.m[r.ID] = wt
		w.mu.Unlock()
		w.run(s.ctx, wt, pw)
	}
	_ = w.disk.Sync(s.ctx) // a failure is logged (persist.go)
	return nil
}

// run starts the watch's goroutine. It ends when the wait does: it fires,
// the node goes, the watch is cancelled or the server closes (ctx).
func (w *watchTable) run(ctx context.Context, wt *watch, pw *orchestrator.PendingWait) {
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

// get returns a watch its caller may use: its owner's, or any for the
// operator.
func (w *watchTable) get(caller tools.Identity, id string) (*watch, error) {
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

func (w *watchTable) remove(id string) {
	w.mu.Lock()
	_, ok := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ok {
		_ = w.disk.Sync(context.Background())
	}
}

// forget cancels and drops the watches an incarnation started.
func (w *watchTable) forget(incarnation string) {
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

func watchHandlers() map[string]handler {
	return map[string]handler{
		"watch_start":  reader(watchStart),
		"watch_wait":   reader(watchWait),
		"watch_cancel": reader(watchCancel),
	}
}

func watchStart(c *call, a waitArgs) (tools.WatchStarted, error) {
	w := c.s.watches
	spec := a.WaitSpec
	spec.TimeoutMS = 0
	pw, err := c.s.eng.watches.PrepareWait(a.Terminal, spec, watchLifetime)
	if err != nil {
		return tools.WatchStarted{}, err
	}
	limit := maxWatchesPerNode
	if c.caller.Role == tools.RoleOperator {
		limit = maxWatchesOperator
	}
	w.mu.Lock()
	mine := 0
	for _, wt := range w.m {
		if wt.owner.Incarnation == c.caller.Incarnation {
			mine++
		}
	}
	if mine >= limit {
		w.mu.Unlock()
		return tools.WatchStarted{}, quotaErr("watches", limit, "node %q has %d watches (the limit is %d): cancel some with watch_cancel or read them with watch_wait", c.caller.Node, mine, limit)
	}
	if len(w.m) >= maxWatches {
		w.mu.Unlock()
		return tools.WatchStarted{}, quotaErr("watches", maxWatches, "%d watches are live, the most the orchestrator keeps: cancel some with watch_cancel", len(w.m))
	}
	w.next++
	id := fmt.Sprintf("watch-%d", w.next)
	wt := &watch{id: id, terminal: a.Terminal, owner: c.caller, spec: spec, after: pw.After, started: time.Now().UTC(), done: make(chan struct{})}
	w.run(c.s.ctx, wt, pw)
	w.m[id] = wt
	w.mu.Unlock()
	// The watch is on disk before its id is handed out; a failure is
	// logged and the watch runs (as a write that failed always did).
	_ = w.disk.Sync(c.ctx)
	return tools.WatchStarted{Watch: id, Terminal: a.Terminal, After: pw.After}, nil
}

type watchWaitArgs struct {
	Watch     string `json:"watch"`
	TimeoutMS int    `json:"timeout_ms"`
}

func watchWait(c *call, a watchWaitArgs) (tools.WatchFired, error) {
	w := c.s.watches
	wt, err := w.get(c.caller, a.Watch)
	if err != nil {
		return tools.WatchFired{}, err
	}
	timeout := tools.DefaultWaitTimeout
	if a.TimeoutMS > 0 {
		timeout = time.Duration(a.TimeoutMS) * time.Millisecond
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-wt.done:
		w.remove(a.Watch)
		if wt.err != nil {
			return tools.WatchFired{}, wt.err
		}
		return tools.WatchFired{Watch: a.Watch, Fired: wt.result.Matched, Result: wt.result}, nil
	case <-t.C:
		return tools.WatchFired{}, tools.Errorf(tools.KindTimeout, "watch %q has not fired yet: call watch_wait again", a.Watch)
	case <-c.ctx.Done():
		return tools.WatchFired{}, tools.Errorf(tools.KindTimeout, "watch_wait cancelled: %w", c.ctx.Err())
	}
}

type watchArg struct {
	Watch string `json:"watch"`
}

func watchCancel(c *call, a watchArg) (tools.WatchCancelled, error) {
	w := c.s.watches
	wt, err := w.get(c.caller, a.Watch)
	if err != nil {
		if tools.KindOf(err) == tools.KindNotFound {
			return tools.WatchCancelled{Watch: a.Watch}, nil
		}
		return tools.WatchCancelled{}, err
	}
	w.remove(a.Watch)
	wt.cancel()
	return tools.WatchCancelled{Watch: a.Watch, Cancelled: true}, nil
}
