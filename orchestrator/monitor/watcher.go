package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"
)

// showTimeout bounds waking a sleeping node for a page.
const showTimeout = 10 * time.Second

// watcher streams one node's screen to the pages that show it. Its
// goroutine (run) holds a Showing of the node, so the node counts as
// observed while at least one page shows it; it ends when stop is called
// (no page shows the node any more), the node's life ends, or the monitor
// closes.
type watcher struct {
	h  *hub
	id string

	ready    chan struct{} // closed once the first frame is encoded (or the node is not there)
	quit     chan struct{}
	quitOnce sync.Once

	// pending counts pages between hub.watcher and their subscription in
	// join; guarded by hub.mu.
	pending int

	mu   sync.Mutex // guards the fields below
	subs map[*client]bool
	ok   bool // the node was found and the frame below is its screen
	rev  uint64
	cols int
	nrow int
	cur  cursorMsg
	runs [][]byte // every row's encoded runs, as last sent
}

func newWatcher(h *hub, id string) *watcher {
	return &watcher{h: h, id: id, ready: make(chan struct{}), quit: make(chan struct{}), subs: map[*client]bool{}}
}

func (w *watcher) stop() { w.quitOnce.Do(func() { close(w.quit) }) }

func (w *watcher) waitReady(ctx context.Context) {
	select {
	case <-w.ready:
	case <-ctx.Done():
	case <-w.h.m.done:
	}
}

// full is the frame of every row. Called with w.mu held.
func (w *watcher) full() json.RawMessage {
	return screenMsg{Node: w.id, Rev: w.rev, Cols: w.cols, Rows: w.nrow, Full: true, Cursor: w.cur, Lines: lines(w.runs)}.appendJSON(nil)
}

func (w *watcher) run() {
	readyOnce := sync.OnceFunc(func() { close(w.ready) })
	defer readyOnce()
	// Once it ends (the node went or was never there), a page that asks
	// for the id again gets a new watcher: a node launched later under
	// the same id is shown.
	defer w.h.retire(w)
	ctx, cancel := context.WithTimeout(context.Background(), showTimeout)
	go func() {
		select {
		case <-w.quit:
		case <-w.h.m.done:
		case <-ctx.Done():
		}
		cancel()
	}()
	sh, err := w.h.m.cfg.Engine.Show(ctx, w.id)
	cancel()
	if err != nil {
		return
	}
	defer sh.Close()
	enc := newEncoder()
	var m memo
	var last time.Time
	for first := true; ; first = false {
		rev, changed := sh.Changed()
		w.update(enc, &m, sh, rev, first)
		if first {
			readyOnce()
		}
		select {
		case <-changed:
		case <-sh.Closing():
			return
		case <-w.quit:
			return
		case <-w.h.m.done:
			return
		}
		// At most one frame per MinInterval: a node printing fast is
		// sent as its latest screen, not as every revision.
		if wait := w.h.m.cfg.MinInterval - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-w.quit:
				t.Stop()
				return
			case <-w.h.m.done:
				t.Stop()
				return
			}
		}
		last = time.Now()
	}
}

// update encodes the screen at rev and sends the rows that differ from
// the last frame to every subscribed page: a screen that scrolled is sent
// as the scroll and its new rows.
func (w *watcher) update(enc encoder, m *memo, sh Shown, rev uint64, first bool) {
	g, stamps := sh.Frame()
	cur := cursorOf(g)
	runs := enc.rows(g, stamps, m)
	w.mu.Lock()
	defer w.mu.Unlock()
	resized := g.Columns != w.cols || g.Rows != w.nrow
	msg := screenMsg{Node: w.id, Rev: rev, Cols: g.Columns, Rows: g.Rows, Full: first || resized, Cursor: cur, Lines: []json.RawMessage{}}
	if !msg.Full {
		msg.Scroll = scrollOf(w.runs, runs)
	}
	for y, r := range runs {
		if old := y + msg.Scroll; msg.Full || old >= len(w.runs) || !bytes.Equal(r, w.runs[old]) {
			msg.Lines = append(msg.Lines, line(y, r))
		}
	}
	changed := len(msg.Lines) > 0 || msg.Scroll > 0 || cur != w.cur
	w.ok, w.rev, w.cols, w.nrow, w.cur, w.runs = true, rev, g.Columns, g.Rows, cur, runs
	if first || !changed {
		return
	}
	ev := event("screen", rev, msg.appendJSON(nil))
	for c := range w.subs {
		c.send(ev)
	}
}
