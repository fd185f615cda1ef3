package toolserver

import (
	"context"
	"sync"

	"github.com/termsprawl/termsprawl/orchestrator"
)

// The engine's news reaches the tool server as a typed feed: the
// engine's callbacks (OnBorn, OnGone, OnStatus) only append an event to
// the queue and return; one goroutine of the tool server works through
// it in order. So a node's birth and end (its token read from its
// session file, its receipts, watches, dialogs and agent state dropped
// and written to disk) never run on the engine's goroutines, and a slow
// disk never holds a close or a launch.

// engineEventKind is what happened.
type engineEventKind uint8

const (
	// eventBorn: a node's session file, with its token, was written
	// (before its program starts).
	eventBorn engineEventKind = iota + 1
	// eventGone: a node's life ended (closed, or its session ended).
	eventGone
	// eventStatus: a node's program status changed on its own.
	eventStatus
)

// engineEvent is one piece of the engine's news.
type engineEvent struct {
	kind engineEventKind
	node orchestrator.NodeMeta // born and gone
}

// eventFeed is the queue and its goroutine (loop), started by newEventFeed
// and ended by close.
type eventFeed struct {
	handle func(engineEvent)

	mu      sync.Mutex // guards queue, posted, handled, changed, closing, closed
	queue   []engineEvent
	posted  uint64        // events appended since the start
	handled uint64        // events handled since the start
	changed chan struct{} // closed (and replaced) each time handled grows
	closing bool          // close began
	closed  bool          // loop ended: posters handle their events themselves

	wake  chan struct{} // one pending wake of loop
	stop  chan struct{} // closed by close
	ended chan struct{} // closed when loop returned

	handleMu sync.Mutex // one handler at a time, in order: loop's, or a poster's after close
}

func newEventFeed(handle func(engineEvent)) *eventFeed {
	f := &eventFeed{handle: handle, changed: make(chan struct{}), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), ended: make(chan struct{})}
	go f.loop()
	return f
}

// post appends ev; it never blocks on the handler. A status change
// right behind another one not yet handled rides on it. After close, the
// poster handles ev itself.
func (f *eventFeed) post(ev engineEvent) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		f.handleMu.Lock()
		f.handle(ev)
		f.handleMu.Unlock()
		return
	}
	if ev.kind == eventStatus && len(f.queue) > 0 && f.queue[len(f.queue)-1].kind == eventStatus {
		f.mu.Unlock()
		return
	}
	f.queue = append(f.queue, ev)
	f.posted++
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default: // a wake is pending: ev rides on it
	}
}

// loop handles the queue in order until close.
func (f *eventFeed) loop() {
	defer close(f.ended)
	for {
		select {
		case <-f.wake:
			f.drain()
		case <-f.stop:
			f.drain()
			return
		}
	}
}

// drain handles every queued event.
func (f *eventFeed) drain() {
	for {
		f.mu.Lock()
		if len(f.queue) == 0 {
			f.mu.Unlock()
			return
		}
		ev := f.queue[0]
		f.queue[0] = engineEvent{}
		f.queue = f.queue[1:]
		f.mu.Unlock()
		f.handleMu.Lock()
		f.handle(ev)
		f.handleMu.Unlock()
		f.mu.Lock()
		f.handled++
		close(f.changed)
		f.changed = make(chan struct{})
		f.mu.Unlock()
	}
}

// sync waits until every event posted before the call was handled, or
// ctx ends. It must not be called by a handler.
func (f *eventFeed) sync(ctx context.Context) error {
	if f == nil {
		return nil // a server of a test that never started
	}
	f.mu.Lock()
	target := f.posted
	for f.handled < target && !f.closed {
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		f.mu.Lock()
	}
	f.mu.Unlock()
	return nil
}

// close handles what is queued and ends the goroutine; later events are
// handled by their posters. It may be called more than once.
func (f *eventFeed) close() {
	if f == nil {
		return
	}
	f.mu.Lock()
	if f.closing {
		f.mu.Unlock()
		return
	}
	f.closing = true
	f.mu.Unlock()
	close(f.stop)
	<-f.ended
	f.mu.Lock()
	f.closed = true
	left := f.queue // posted after loop's last drain
	f.queue = nil
	f.mu.Unlock()
	f.handleMu.Lock()
	for _, ev := range left {
		f.handle(ev)
	}
	f.handleMu.Unlock()
	f.mu.Lock()
	f.handled = f.posted
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// engineEvent handles one event of the feed (on the feed's goroutine).
func (s *Server) engineEvent(ev engineEvent) {
	switch ev.kind {
	case eventBorn:
		s.loadToken(ev.node)
	case eventGone:
		if s.hooks.nodeGone != nil {
			s.hooks.nodeGone(ev.node.ID)
		}
		s.nodeGone(ev.node)
	case eventStatus:
		s.kickStream() // a program's exit reaches the streams at once
	}
}
