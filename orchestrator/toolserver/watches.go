package toolserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// Watches are waits that outlive one request.

// watchLifetime bounds how long a watch waits before it gives up.
const watchLifetime = 24 * time.Hour

// firedWatchTTL is how long a fired watch's result waits to be read.
const firedWatchTTL = 10 * time.Minute

type watch struct {
	id, terminal string
	spec         tools.WaitSpec // what it waits for (the monitor shows it)
	owner        tools.Identity // who started it
	cancel       context.CancelFunc
	done         chan struct{} // closed when the wait ended; then result and err are set
	result       tools.WaitResult
	err          error
}

type watchTable struct {
	mu   sync.Mutex // guards next and m
	next int
	m    map[string]*watch
}

func newWatchTable() *watchTable { return &watchTable{m: map[string]*watch{}} }

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
	delete(w.m, id)
	w.mu.Unlock()
}

// forget cancels and drops the watches an incarnation started.
func (w *watchTable) forget(incarnation string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, wt := range w.m {
		if wt.owner.Incarnation == incarnation {
			wt.cancel()
			delete(w.m, id)
		}
	}
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
	pw, err := c.s.o.PrepareWait(a.Terminal, spec, watchLifetime)
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
	wctx, cancel := context.WithCancel(c.s.ctx)
	wt := &watch{id: id, terminal: a.Terminal, spec: spec, owner: c.caller, cancel: cancel, done: make(chan struct{})}
	w.m[id] = wt
	w.mu.Unlock()
	// The watch's goroutine ends when the wait does: it fires, the node
	// goes, the watch is cancelled or the server closes (wctx).
	go func() {
		defer close(wt.done)
		wt.result, wt.err = pw.Run(wctx)
		// A fired watch nobody reads is dropped after a while, so
		// forgotten watches do not fill the table.
		time.AfterFunc(firedWatchTTL, func() { w.remove(id) })
	}()
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
