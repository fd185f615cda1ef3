// Package probe publishes a terminal program's UI as a semantic tree to
// termsprawl (CONTRACT §22), so agents can target its controls by role
// and name — `button "OK" ref=semantic:ok@42` — instead of guessing
// cells.
//
// # Protocol (for programs in any language)
//
// A program running in a termsprawl node finds its session file in
// $TERMSPRAWL_SESSION_FILE and calls the tool server as termsprawlctl does
// (CONTRACT §3–§4): it reads dirname(dirname(SESSION_FILE))/endpoint.json
// for the URL, the session file for the bearer token, and POSTs
//
//	{"operation": "semantic_publish", "args": {"tree": ROOT}}
//
// where ROOT is one node, recursively:
//
//	{"id": "ok", "role": "button", "name": "OK", "value": "", "test_id": "ok-btn",
//	 "label": "", "bounds": {"row": 5, "column": 10, "width": 6, "height": 1},
//	 "state": {"focused": true, "checked": false, "selected": false,
//	           "disabled": false, "expanded": false},
//	 "children": [ … ]}
//
// id and role are required, everything else optional. Ids are unique in a
// tree and stable across commits (a ref names a node by id). Roles are a
// fixed list: window dialog button checkbox radio textbox list listitem
// menu menuitem tab tablist text progressbar table row cell group.
// Bounds are 0-based cells and must lie inside the screen. A commit
// carries the whole tree: at most 4,096 nodes and 1 MiB. The reply is
// {"ok": true, "value": {"terminal", "revision", "commit", "nodes"}}: the
// orchestrator stamps the commit with the node's screen revision. A bad
// tree is {"ok": false, "kind": "usage", "details": {"reason": …}} and
// changes nothing. Only the node's own session may publish; the
// operator's session and other nodes' never publish for it.
//
// Publish a commit whenever what the tree says changed (focus, values,
// checked states, layout) — the orchestrator's waits (terminal_wait_for
// wait=semantic, terminal_fill, terminal_check) are satisfied only by a
// commit after their baseline. Publish at most ~30 commits a second;
// only the latest matters.
//
// # Go
//
// [New] makes a [Publisher]; [Publisher.Publish] never blocks: it keeps
// the latest tree and a goroutine sends it, coalescing to at most
// [DefaultRate] commits a second. A program not run by termsprawl (no
// $TERMSPRAWL_SESSION_FILE) gets a disabled Publisher whose methods do
// nothing. For Bubble Tea v2 programs, [Layout] measures rendered blocks
// so each component declares its node with its bounds while View joins
// the blocks.
package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// Roles of the fixed list.
const (
	RoleWindow      = "window"
	RoleDialog      = "dialog"
	RoleButton      = "button"
	RoleCheckbox    = "checkbox"
	RoleRadio       = "radio"
	RoleTextbox     = "textbox"
	RoleList        = "list"
	RoleListitem    = "listitem"
	RoleMenu        = "menu"
	RoleMenuitem    = "menuitem"
	RoleTab         = "tab"
	RoleTablist     = "tablist"
	RoleText        = "text"
	RoleProgressbar = "progressbar"
	RoleTable       = "table"
	RoleRow         = "row"
	RoleCell        = "cell"
	RoleGroup       = "group"
)

// SessionEnv names the node's session file.
const SessionEnv = "TERMSPRAWL_SESSION_FILE"

// DefaultRate is the most commits a second a Publisher sends.
const DefaultRate = 30

// Bounds are a node's cells, 0-based; State are its flags; Node is one
// node of the tree, with Add and Find (the wire types of tools, which the
// orchestrator validates).
type (
	Bounds = tools.SemanticBounds
	State  = tools.SemanticState
	Node   = tools.SemanticNode
)

// Options tune a Publisher.
type Options struct {
	// SessionFile is the node's session (default $TERMSPRAWL_SESSION_FILE).
	SessionFile string
	// Rate is the most commits a second (default DefaultRate, at most 1000).
	Rate int
	// OnError hears every failed commit (default: none; a failure never
	// stops later commits).
	OnError func(error)
	// Send replaces the tool call (tests); it gets the tree's JSON.
	Send func(ctx context.Context, tree json.RawMessage) error
	// Instance names the orchestrator now running ("" when none); the
	// publisher sends its last tree again when it changes (a restart
	// starts with no tree). Default: endpoint.json's instance_id beside
	// the session file, read every second (a file read, no call).
	Instance func() string
}

// ErrUnreachable wraps a send that found no orchestrator (kind
// unavailable): the tree is kept and sent again, with backoff up to
// maxBackoff, until it is delivered or a newer one replaces it — so the
// tree is back soon after an orchestrator restart.
var ErrUnreachable = errors.New("probe: termsprawl is not reachable")

// Backoff of a tree that could not be delivered.
const (
	firstBackoff = 100 * time.Millisecond
	maxBackoff   = 2 * time.Second
)

func unreachable(err error) bool {
	var te *tools.Error
	return errors.Is(err, ErrUnreachable) || (errors.As(err, &te) && te.Kind == tools.KindUnavailable)
}

// Stats count what a Publisher did.
type Stats struct {
	// Published commits were sent and accepted; Failed were refused or
	// could not be sent; Coalesced trees were replaced by a newer one
	// before they were sent.
	Published, Failed, Coalesced uint64
}

// Publisher sends a program's trees; it is safe for concurrent use.
type Publisher struct {
	send    func(ctx context.Context, tree json.RawMessage) error
	onError func(error)
	every   time.Duration

	mu      sync.Mutex
	pending json.RawMessage // the latest tree not yet sent
	busy    bool            // the sender holds a tree
	stats   Stats
	lastErr error
	idle    chan struct{} // closed when nothing is pending or being sent

	instance func() string
	lastSent json.RawMessage // the last tree delivered, and to which instance
	sentTo   string

	wake   chan struct{} // capacity 1
	quit   chan struct{}
	done   chan struct{}
	closed bool
}

// New makes a Publisher. Without a session file (the program is not in a
// termsprawl node) the Publisher is disabled: Publish does nothing.
func New(opts Options) *Publisher {
	p := &Publisher{onError: opts.OnError}
	file := opts.SessionFile
	if file == "" {
		file = os.Getenv(SessionEnv)
	}
	p.send = opts.Send
	if p.send == nil && file != "" {
		p.send = func(ctx context.Context, tree json.RawMessage) error {
			args, err := json.Marshal(map[string]json.RawMessage{"tree": tree})
			if err != nil {
				return err
			}
			return tools.Call(ctx, file, tools.Request{Operation: "semantic_publish", Args: args}, tools.CallOptions{Timeout: 10 * time.Second}).Err()
		}
	}
	p.instance = opts.Instance
	if p.instance == nil && opts.Send == nil && file != "" {
		ep := tools.EndpointPathFor(file)
		p.instance = func() string {
			e, err := tools.ReadEndpoint(ep)
			if err != nil {
				return ""
			}
			return e.InstanceID
		}
	}
	rate := opts.Rate
	if rate <= 0 {
		rate = DefaultRate
	}
	p.every = time.Second / time.Duration(min(rate, 1000))
	if p.send != nil {
		p.wake = make(chan struct{}, 1)
		p.quit = make(chan struct{})
		p.done = make(chan struct{})
		go p.loop()
	}
	return p
}

// Enabled reports whether the Publisher sends anything.
func (p *Publisher) Enabled() bool { return p != nil && p.send != nil }

// Publish queues root as the latest tree and returns at once: it never
// waits for the orchestrator. A tree still queued is replaced (counted
// as coalesced). The tree is encoded now, so root may change afterwards.
func (p *Publisher) Publish(root *Node) error {
	if !p.Enabled() || root == nil {
		return nil
	}
	raw, err := json.Marshal(root)
	if err != nil {
		return fmt.Errorf("probe: encode tree: %w", err)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errors.New("probe: publisher is closed")
	}
	if p.pending != nil {
		p.stats.Coalesced++
	}
	p.pending = raw
	if p.idle == nil {
		p.idle = make(chan struct{})
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

// Flush waits until every queued tree was sent (or ctx ends) and returns
// the last commit's error.
func (p *Publisher) Flush(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	p.mu.Lock()
	idle := p.idle
	p.mu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

// Stats returns the counts so far.
func (p *Publisher) Stats() Stats {
	if p == nil {
		return Stats{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close stops the sender after the queued tree went out (at most 2 s).
func (p *Publisher) Close() {
	if !p.Enabled() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.Flush(ctx)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	close(p.quit)
	<-p.done
}

// loop sends the latest tree, at most one commit per p.every.
func (p *Publisher) loop() {
	defer close(p.done)
	var last time.Time
	backoff := time.Duration(0)
	for {
		var retry <-chan time.Time
		var rt *time.Timer
		switch {
		case backoff > 0:
			rt = time.NewTimer(backoff)
			retry = rt.C
		case p.instance != nil:
			rt = time.NewTimer(instanceCheck)
			retry = rt.C
		}
		select {
		case <-p.quit:
			return
		case <-p.wake:
		case <-retry:
		}
		if rt != nil {
			rt.Stop()
		}
		p.resendOnRestart()
		if wait := p.every - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-p.quit:
				t.Stop()
				return
			case <-t.C:
			}
		}
		p.mu.Lock()
		tree := p.pending
		p.pending = nil
		p.busy = tree != nil
		p.mu.Unlock()
		if tree == nil {
			continue
		}
		last = time.Now()
		to := ""
		if p.instance != nil {
			to = p.instance()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := p.send(ctx, tree)
		cancel()
		p.mu.Lock()
		p.busy = false
		p.lastErr = err
		switch {
		case err == nil:
			p.stats.Published++
			p.lastSent, p.sentTo = tree, to
			backoff = 0
		case unreachable(err):
			// Kept for a retry unless a newer tree came meanwhile.
			p.stats.Failed++
			if p.pending == nil {
				p.pending = tree
			}
			backoff = min(max(backoff*2, firstBackoff), maxBackoff)
		default:
			p.stats.Failed++
			backoff = 0
		}
		if p.pending == nil && p.idle != nil {
			close(p.idle)
			p.idle = nil
		}
		p.mu.Unlock()
		if err != nil && p.onError != nil {
			p.onError(err)
		}
	}
}

// instanceCheck is how often the publisher looks for a restarted
// orchestrator.
const instanceCheck = time.Second

// resendOnRestart queues the last delivered tree again when another
// orchestrator runs now than the one it was delivered to.
func (p *Publisher) resendOnRestart() {
	if p.instance == nil {
		return
	}
	p.mu.Lock()
	last, to := p.lastSent, p.sentTo
	p.mu.Unlock()
	if last == nil {
		return
	}
	now := p.instance()
	if now == "" || now == to {
		return
	}
	p.mu.Lock()
	if p.pending == nil {
		p.pending = last
		if p.idle == nil {
			p.idle = make(chan struct{})
		}
	}
	p.mu.Unlock()
}

// treeKey is a tree's identity for skipping identical commits.
func treeKey(root *Node) string {
	raw, err := json.Marshal(root)
	if err != nil {
		return ""
	}
	return string(raw)
}
