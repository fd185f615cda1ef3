package notify

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// Notification events (the "event" field of a webhook's JSON).
const (
	EventNeedsHuman = "needs_human" // waiting: a dialog, or the agent's "needs input"
	EventError      = "error"       // its turn failed
	EventCrash      = "crash"       // its program died on its own with a non-zero code or a signal
	EventTurnDone   = "turn_done"   // a turn of at least 30 s ended
	EventExited     = "exited"      // its program ended
	EventTest       = "test"        // termsprawl notify test
	EventBudget     = "budget"      // a budget reached 80 % or 100 % (CONTRACT §28)
)

// Event is one notification; its JSON is what a webhook receives.
type Event struct {
	Node   string `json:"node"`
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Event  string `json:"event"`
	State  string `json:"state"`
	Title  string `json:"title"`
	Text   string `json:"text"`
	Answer string `json:"answer"` // how a human answers (a command), or ""
	At     string `json:"at"`
}

// Wanted reports whether mode sends event: quiet only needs-a-human;
// normal also errors and crashes; all also finished turns and exits.
func Wanted(mode, event string) bool {
	switch event {
	case EventNeedsHuman, EventTest, EventBudget:
		return true
	case EventError, EventCrash:
		return mode == tools.NotifyNormal || mode == tools.NotifyAll
	case EventTurnDone, EventExited:
		return mode == tools.NotifyAll
	}
	return false
}

// Target sends notifications somewhere. Send answers in a few words what
// the other side said ("HTTP 200", "notification id 7").
type Target interface {
	Name() string
	Send(ctx context.Context, e Event) (string, error)
}

// Options tune a Notifier (zero values: the defaults).
type Options struct {
	Window      time.Duration // one per node and event per Window (30 s)
	SendTimeout time.Duration // one attempt (5 s)
	Backoff     time.Duration // first retry delay, doubled each time (1 s)
	Attempts    int           // per notification and target (5)
	Queue       int           // bounded queue (256)
	Now         func() time.Time
}

func (o *Options) defaults() {
	if o.Window == 0 {
		o.Window = 30 * time.Second
	}
	if o.SendTimeout == 0 {
		o.SendTimeout = 5 * time.Second
	}
	if o.Backoff == 0 {
		o.Backoff = time.Second
	}
	if o.Attempts == 0 {
		o.Attempts = 5
	}
	if o.Queue == 0 {
		o.Queue = 256
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// job is one notification to one target.
type job struct {
	t       Target
	e       Event
	attempt int
	due     time.Time
}

// Notifier filters, de-duplicates and queues notifications; one sender
// goroutine (started by New, ended by Close) sends them in order and
// keeps failed ones for a retry.
type Notifier struct {
	mode    string
	targets []Target
	opts    Options
	log     *slog.Logger

	queue chan job
	done  chan struct{}
	ended chan struct{}
	ctx   context.Context
	stop  context.CancelFunc

	mu      sync.Mutex           // guards last and closed
	last    map[string]time.Time // node + "\x00" + event → when it was last sent
	closed  bool
	dropped int
}

// New starts a Notifier. Close ends its goroutine.
func New(mode string, targets []Target, log *slog.Logger, opts Options) *Notifier {
	opts.defaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(context.Background())
	n := &Notifier{mode: mode, targets: targets, opts: opts, log: log, queue: make(chan job, opts.Queue),
		done: make(chan struct{}), ended: make(chan struct{}), ctx: ctx, stop: stop, last: map[string]time.Time{}}
	go n.sender()
	return n
}

// Mode is the notifier's mode.
func (n *Notifier) Mode() string { return n.mode }

// Notify queues e for every target if the mode wants it and the node has
// had no notification of this event within the window. It never blocks:
// with the queue full the notification is dropped and logged. It reports
// whether e was queued.
func (n *Notifier) Notify(e Event) bool {
	if !Wanted(n.mode, e.Event) || len(n.targets) == 0 {
		return false
	}
	now := n.opts.Now()
	if e.At == "" {
		e.At = now.UTC().Format(time.RFC3339)
	}
	key := e.Node + "\x00" + e.Event
	if e.Event == EventBudget {
		// Each budget's 80 % and 100 % crossing is one event of its own,
		// fired once (a runaway agent crosses both within the window).
		key += "\x00" + e.Title + "\x00" + e.State
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return false
	}
	if t, ok := n.last[key]; ok && now.Sub(t) < n.opts.Window {
		n.mu.Unlock()
		return false
	}
	n.last[key] = now
	for k, t := range n.last { // bounded: entries older than the window go
		if now.Sub(t) >= n.opts.Window {
			delete(n.last, k)
		}
	}
	n.mu.Unlock()
	queued := false
	for _, t := range n.targets {
		select {
		case n.queue <- job{t: t, e: e, attempt: 1}:
			queued = true
		default:
			n.mu.Lock()
			n.dropped++
			n.mu.Unlock()
			n.log.Warn("notification dropped: the queue is full", "target", t.Name(), "node", e.Node, "event", e.Event)
		}
	}
	return queued
}

// sender is the one goroutine that sends: queued jobs first come first
// served, failed ones again when their backoff is due. It ends on Close.
func (n *Notifier) sender() {
	defer close(n.ended)
	var retries []job
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var next time.Time
		for _, j := range retries {
			if next.IsZero() || j.due.Before(next) {
				next = j.due
			}
		}
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), 0))
		}
		var j job
		select {
		case <-n.done:
			for _, r := range retries {
				n.log.Warn("notification not delivered: termsprawl stopped", "target", r.t.Name(), "node", r.e.Node, "event", r.e.Event)
			}
			return
		case j = <-n.queue:
		case <-timer.C:
			now := time.Now()
			keep := retries[:0]
			for _, r := range retries {
				if j.t == nil && !r.due.After(now) {
					j = r
					continue
				}
				keep = append(keep, r)
			}
			retries = keep
			if j.t == nil {
				continue
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if r, again := n.send(j); again {
			retries = append(retries, r)
		}
	}
}

// send makes one attempt; it returns the job to retry, if any.
func (n *Notifier) send(j job) (job, bool) {
	ctx, cancel := context.WithTimeout(n.ctx, n.opts.SendTimeout)
	answer, err := j.t.Send(ctx, j.e)
	cancel()
	if err == nil {
		n.log.Debug("notification sent", "target", j.t.Name(), "node", j.e.Node, "event", j.e.Event, "answer", answer)
		return j, false
	}
	if j.attempt >= n.opts.Attempts {
		n.log.Warn("notification failed, giving up", "target", j.t.Name(), "node", j.e.Node, "event", j.e.Event, "attempts", j.attempt, "err", err)
		return j, false
	}
	delay := n.opts.Backoff << (j.attempt - 1)
	n.log.Info("notification failed, will retry", "target", j.t.Name(), "node", j.e.Node, "event", j.e.Event, "attempt", j.attempt, "retry_in", delay, "err", err)
	j.attempt++
	j.due = time.Now().Add(delay)
	return j, true
}

// Test sends e to every target now, in order, bypassing mode, window and
// queue, and returns what each answered.
func (n *Notifier) Test(ctx context.Context, e Event) []tools.NotifyAnswer {
	out := make([]tools.NotifyAnswer, 0, len(n.targets))
	for _, t := range n.targets {
		c, cancel := context.WithTimeout(ctx, n.opts.SendTimeout)
		answer, err := t.Send(c, e)
		cancel()
		a := tools.NotifyAnswer{Target: t.Name(), OK: err == nil, Answer: answer}
		if err != nil {
			a.Answer = err.Error()
		}
		out = append(out, a)
	}
	return out
}

// Close ends the sender goroutine and waits for it; an attempt in flight
// is cancelled.
func (n *Notifier) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	n.mu.Unlock()
	close(n.done)
	n.stop()
	<-n.ended
}

// FuncTarget is a Target from a function (the tool server's tmux and
// terminal targets).
type FuncTarget struct {
	Label string
	F     func(ctx context.Context, e Event) (string, error)
}

// Name is the target's name.
func (f FuncTarget) Name() string { return f.Label }

// Send calls F.
func (f FuncTarget) Send(ctx context.Context, e Event) (string, error) {
	a, err := f.F(ctx, e)
	if err != nil {
		return a, fmt.Errorf("%s: %w", f.Label, err)
	}
	return a, nil
}
