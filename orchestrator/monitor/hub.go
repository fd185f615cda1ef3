package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// clientQueue is how many events wait for a page; a page that falls this
// far behind is dropped and reconnects (to a full frame).
const clientQueue = 256

// client is one connected page: its event stream and the node it shows.
type client struct {
	show    string
	watcher *watcher      // of show, nil if none; set by join
	out     chan []byte   // encoded SSE events
	dead    chan struct{} // closed when dropped for being too slow
	once    sync.Once
}

func (c *client) send(ev []byte) {
	select {
	case c.out <- ev:
	default:
		c.once.Do(func() { close(c.dead) })
	}
}

// hub fans the engine's state out to the connected pages.
type hub struct {
	m *Monitor

	mu       sync.Mutex // guards clients, watchers, state, polling
	clients  map[*client]bool
	watchers map[string]*watcher
	state    []byte        // the last state event's data
	polling  chan struct{} // closed to stop the poller; nil when none runs
	// kick wakes the poller at once (Monitor.Kick): a dialog or an agent
	// state changed, so the rows go out now, not at the next tick.
	kick chan struct{}
}

func newHub(m *Monitor) *hub {
	return &hub{m: m, clients: map[*client]bool{}, watchers: map[string]*watcher{}, kick: make(chan struct{}, 1)}
}

// event encodes one SSE event.
func event(name string, id uint64, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("event: ")
	b.WriteString(name)
	b.WriteByte('\n')
	if id != 0 {
		b.WriteString("id: ")
		b.WriteString(strconv.FormatUint(id, 10))
		b.WriteByte('\n')
	}
	b.WriteString("data: ")
	b.Write(data) // JSON has no raw newlines
	b.WriteString("\n\n")
	return b.Bytes()
}

type nodeMsg struct {
	tools.NodeInfo
	AgentState *AgentState `json:"agent_state,omitempty"`
}

type dialogMsg struct {
	tools.Dialog
	// Answer are the commands that answer it (the page shows them; it
	// cannot answer).
	Answer []string `json:"answer"`
}

type stateMsg struct {
	Nodes   []nodeMsg   `json:"nodes"`
	Dialogs []dialogMsg `json:"dialogs"`
	Watches []Watch     `json:"watches"`
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// answers are the termsprawl commands that answer d.
func answers(d tools.Dialog) []string {
	base := "termsprawl answer " + shellQuote(d.ID) + " "
	if len(d.Options) > 0 {
		out := make([]string, 0, len(d.Options)+1)
		for _, o := range d.Options {
			out = append(out, base+"allow --selection "+shellQuote(o))
		}
		return append(out, base+"deny")
	}
	return []string{base + tools.AnswerAllow, base + tools.AnswerDeny, base + tools.AnswerAlways}
}

// readState reads the engine and the side tables into a state event's data.
func (h *hub) readState() []byte {
	var side SideState
	if h.m.cfg.Side != nil {
		side = h.m.cfg.Side.MonitorSide()
	}
	st := stateMsg{Nodes: []nodeMsg{}, Dialogs: []dialogMsg{}, Watches: side.Watches}
	if st.Watches == nil {
		st.Watches = []Watch{}
	}
	for _, n := range h.m.cfg.Engine.Peek() {
		// The revision moves with every output; the shown screen carries
		// it (screen events), so state events go out only when something
		// else changed.
		n.Revision = 0
		if w, ok := side.Worktrees[n.Terminal]; ok {
			n.Worktree = &w
		}
		nm := nodeMsg{NodeInfo: n}
		if a, ok := side.Agents[n.Terminal]; ok {
			nm.AgentState = &a
		}
		st.Nodes = append(st.Nodes, nm)
	}
	for _, d := range side.Dialogs {
		st.Dialogs = append(st.Dialogs, dialogMsg{Dialog: d, Answer: answers(d)})
	}
	data, _ := json.Marshal(st)
	return data
}

// join connects a page showing node show ("" none) and queues its full
// frame.
func (h *hub) join(ctx context.Context, show string) *client {
	c := &client{show: show, out: make(chan []byte, clientQueue), dead: make(chan struct{})}
	var w *watcher
	if show != "" {
		w = h.watcher(show)
		w.waitReady(ctx)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == nil {
		h.state = h.readState()
	}
	if h.polling == nil {
		h.polling = make(chan struct{})
		go h.poll(h.polling)
	}
	h.clients[c] = true
	if w != nil {
		w.pending--
		c.watcher = w
	}
	var screen json.RawMessage = []byte("null")
	var rev uint64
	if w != nil {
		// Under w.mu: no screen event of w reaches c before its frame.
		w.mu.Lock()
		if w.ok {
			screen, rev = w.full(), w.rev
		}
		w.subs[c] = true
		w.mu.Unlock()
	}
	showJSON, _ := json.Marshal(show)
	var b bytes.Buffer
	b.WriteString(`{"show":`)
	b.Write(showJSON)
	b.WriteString(`,"screen":`)
	b.Write(screen)
	b.WriteString(`,"state":`)
	b.Write(h.state)
	b.WriteString(`}`)
	c.out <- event("frame", rev, b.Bytes())
	return c
}

// leave disconnects a page; the last one stops the poller, and the last
// page showing a node releases it.
func (h *hub) leave(c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.clients, c)
	if w := c.watcher; w != nil {
		w.mu.Lock()
		delete(w.subs, c)
		empty := len(w.subs) == 0 && w.pending == 0
		w.mu.Unlock()
		if empty {
			if h.watchers[c.show] == w {
				delete(h.watchers, c.show)
			}
			w.stop()
		}
	}
	if len(h.clients) == 0 && h.polling != nil {
		close(h.polling)
		h.polling = nil
		h.state = nil
	}
}

// watcher returns the watcher of node id, starting it if needed, and
// counts a page about to subscribe to it (join subscribes it), so a page
// leaving meanwhile does not stop it. Call without h.mu.
func (h *hub) watcher(id string) *watcher {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.watchers[id]
	if w == nil {
		w = newWatcher(h, id)
		h.watchers[id] = w
		go w.run()
	}
	w.pending++
	return w
}

// retire forgets a watcher whose goroutine ended; its pages keep their
// subscription until they leave (leave finds no watcher then, or a new
// one it leaves alone unless nobody uses it).
func (h *hub) retire(w *watcher) {
	h.mu.Lock()
	if h.watchers[w.id] == w {
		delete(h.watchers, w.id)
	}
	h.mu.Unlock()
}

// poll re-reads the state every Poll and sends it to every page when it
// changed, until stop closes.
func (h *hub) poll(stop chan struct{}) {
	t := time.NewTicker(h.m.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-h.m.done:
			return
		case <-t.C:
		case <-h.kick:
		}
		data := h.readState()
		h.mu.Lock()
		if h.polling == stop && !bytes.Equal(data, h.state) {
			h.state = data
			ev := event("state", 0, data)
			for c := range h.clients {
				c.send(ev)
			}
		}
		h.mu.Unlock()
	}
}

// Kick makes the streams' state event go out now when the node rows or
// the side tables changed (a dialog opened or was answered, an agent's
// state moved), instead of at the next Poll. It never blocks.
func (m *Monitor) Kick() {
	select {
	case m.hub.kick <- struct{}{}:
	default:
	}
}
