package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The event stream (CONTRACT §19): GET /events?show=NODE on the tool
// server's listener, with the operator's bearer token, as Server-Sent
// Events. It is the web monitor's stream (one source): a frame on
// connect, then state events when a row, an agent state, a dialog or a
// watch changed, and screen events with the shown node's changed rows.
// Events is its client; the dashboard (cli/dash) reads it.

// EventsURL is the event stream's URL beside the endpoint's /call URL.
func EventsURL(callURL, show string) (string, error) {
	if err := ValidateEndpointURL(callURL); err != nil {
		return "", err
	}
	u, _ := url.Parse(callURL)
	u.Path = "/events"
	if show != "" {
		u.RawQuery = url.Values{"show": {show}}.Encode()
	}
	return u.String(), nil
}

// BearerToken extracts a well-formed token from an Authorization header.
func BearerToken(h string) (string, bool) { return bearerToken(h) }

// StreamAgent is an agent's state in a stream's node row.
type StreamAgent struct {
	State      string    `json:"state"`
	Message    string    `json:"message,omitempty"`
	Updated    time.Time `json:"updated,omitzero"`
	Since      time.Time `json:"since,omitzero"`
	NeedsHuman bool      `json:"needs_human,omitempty"`
}

// StreamNode is one node's row (its revision is 0: screens carry it).
type StreamNode struct {
	NodeInfo
	AgentState *StreamAgent `json:"agent_state,omitempty"`
}

// StreamDialog is a pending dialog and the commands that answer it.
type StreamDialog struct {
	Dialog
	Answer []string `json:"answer"`
}

// StreamWatch is a watch in progress or fired and not yet read.
type StreamWatch struct {
	ID       string `json:"watch"`
	Terminal string `json:"terminal"`
	Owner    string `json:"owner"`
	What     string `json:"what"`
	Fired    bool   `json:"fired"`
}

// StreamState is a state event: every live node, the pending dialogs
// and the watches.
type StreamState struct {
	Nodes   []StreamNode   `json:"nodes"`
	Dialogs []StreamDialog `json:"dialogs"`
	Watches []StreamWatch  `json:"watches"`
}

// Run attribute bits (StreamRun.A); the underline style is A >> 8.
const (
	RunBold      = 1 << 0
	RunItalic    = 1 << 1
	RunFaint     = 1 << 2
	RunStrike    = 1 << 3
	RunInverse   = 1 << 4
	RunInvisible = 1 << 5
	RunBlink     = 1 << 6
)

// StreamRun is a stretch of cells of one style: colours are #rrggbb
// ("" the default), C is the cursor's shape + 1 on the cursor's cell,
// W 1 for one wide character.
type StreamRun struct {
	T string `json:"t"`
	F string `json:"f,omitempty"`
	B string `json:"b,omitempty"`
	U string `json:"u,omitempty"`
	A int    `json:"a,omitempty"`
	C int    `json:"c,omitempty"`
	W int    `json:"w,omitempty"`
}

// StreamLine is one row of a screen.
type StreamLine struct {
	Y int         `json:"y"`
	R []StreamRun `json:"r"`
}

// StreamCursor is where the cursor is.
type StreamCursor struct {
	X       int  `json:"x"`
	Y       int  `json:"y"`
	Visible bool `json:"visible"`
	Shape   int  `json:"shape"`
}

// StreamScreen is a screen event: the shown node's changed rows (every
// row when Full) at revision Rev.
type StreamScreen struct {
	Node   string       `json:"node"`
	Rev    uint64       `json:"rev"`
	Cols   int          `json:"cols"`
	Rows   int          `json:"rows"`
	Full   bool         `json:"full"`
	Cursor StreamCursor `json:"cursor"`
	// Scroll (never with Full) moves every row up this many rows before
	// Lines apply: row y shows what row y+Scroll showed, and the last
	// Scroll rows are blank until Lines fill them.
	Scroll int          `json:"scroll,omitempty"`
	Lines  []StreamLine `json:"lines"`
}

// StreamFrame is the first event of a connection.
type StreamFrame struct {
	Show   string        `json:"show"`
	Screen *StreamScreen `json:"screen"`
	State  StreamState   `json:"state"`
}

// StreamEvent is what Events delivers: exactly one of its parts is set.
type StreamEvent struct {
	Frame  *StreamFrame
	State  *StreamState
	Screen *StreamScreen
	// Down is set when the stream broke (or could not connect): the
	// client reconnects by itself; Err says why, NotRunning whether no
	// orchestrator answers at all.
	Down       bool
	Err        error
	NotRunning bool
	// At is when the event was read off the wire.
	At time.Time
}

// EventsOptions tunes Events.
type EventsOptions struct {
	HTTPClient *http.Client // nil: the client of Call (no proxies)
	// Retry is the least pause before reconnecting when the endpoint did
	// not change (default 500 ms); a new endpoint.json (fsnotify)
	// reconnects at once.
	Retry time.Duration
}

// Events is a running subscription to the event stream of the
// orchestrator of sessionFile's state directory.
type Events struct {
	sessionFile string
	opts        EventsOptions
	out         chan StreamEvent
	ctx         context.Context
	cancel      context.CancelFunc
	done        chan struct{}

	mu      sync.Mutex // guards show, restart
	show    string
	restart context.CancelFunc // ends the current connection
}

// Subscribe starts reading the event stream for the node show ("" none)
// and returns at once; C delivers events until ctx ends or Close. Each
// connection re-reads the session file and endpoint.json (nothing
// cached), so the stream comes back after an orchestrator restart.
func Subscribe(ctx context.Context, sessionFile, show string, opts EventsOptions) *Events {
	if opts.Retry <= 0 {
		opts.Retry = 500 * time.Millisecond
	}
	cctx, cancel := context.WithCancel(ctx)
	e := &Events{sessionFile: sessionFile, opts: opts, out: make(chan StreamEvent, 64), ctx: cctx, cancel: cancel,
		done: make(chan struct{}), show: show}
	go e.run()
	return e
}

// C delivers the events; it is closed when the subscription ends.
func (e *Events) C() <-chan StreamEvent { return e.out }

// Show switches the shown node: the stream reconnects and its next frame
// carries id's screen.
func (e *Events) Show(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.show == id {
		return
	}
	e.show = id
	if e.restart != nil {
		e.restart()
	}
}

// Shown is the node the stream shows.
func (e *Events) Shown() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.show
}

// Close ends the subscription and waits for its goroutine.
func (e *Events) Close() {
	e.cancel()
	<-e.done
}

func (e *Events) emit(ev StreamEvent) bool {
	ev.At = time.Now()
	select {
	case e.out <- ev:
		return true
	case <-e.ctx.Done():
		return false
	}
}

// run connects, reads until the connection ends, and reconnects.
func (e *Events) run() {
	defer close(e.done)
	defer close(e.out)
	client := httpClientFor(CallOptions{HTTPClient: e.opts.HTTPClient})
	for e.ctx.Err() == nil {
		e.mu.Lock()
		cctx, cancel := context.WithCancel(e.ctx)
		e.restart = cancel
		show := e.show
		e.mu.Unlock()
		instance, switched, err := e.connect(cctx, client, show)
		cancel()
		if e.ctx.Err() != nil {
			return
		}
		if switched {
			continue // Show: reconnect at once with the new node
		}
		if !e.emit(StreamEvent{Down: true, Err: err, NotRunning: errors.Is(err, ErrNotRunning)}) {
			return
		}
		e.waitRetry(instance)
	}
}

// waitRetry waits for a new endpoint.json (an orchestrator that
// restarted) or the retry pause, whichever comes first.
func (e *Events) waitRetry(instance string) {
	wctx, cancel := context.WithTimeout(e.ctx, e.opts.Retry)
	defer cancel()
	e.mu.Lock()
	e.restart = cancel // Show during the pause reconnects at once
	e.mu.Unlock()
	// WaitForEndpoint watches with fsnotify; the timeout is the pause.
	_, _ = WaitForEndpoint(wctx, EndpointPathFor(e.sessionFile), func(ep Endpoint) bool {
		return ep.InstanceID != instance && ValidateEndpointURL(ep.URL) == nil
	})
	<-wctx.Done()
}

// errStreamEnded is a stream the server closed.
var errStreamEnded = errors.New("the event stream ended")

// connect runs one connection; switched is true when Show ended it.
func (e *Events) connect(ctx context.Context, client *http.Client, show string) (instance string, switched bool, err error) {
	sess, err := ReadSession(e.sessionFile)
	if err != nil {
		return "", false, err
	}
	ep, err := ReadEndpoint(EndpointPathFor(e.sessionFile))
	if err != nil {
		return "", false, fmt.Errorf("%w: %w", ErrNotRunning, err)
	}
	u, err := EventsURL(ep.URL, show)
	if err != nil {
		return ep.InstanceID, false, fmt.Errorf("%w: %w", ErrNotRunning, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return ep.InstanceID, false, err
	}
	req.Header.Set("Authorization", "Bearer "+sess.Token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", "termsprawl-client")
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil && e.ctx.Err() == nil {
			return ep.InstanceID, true, nil
		}
		if isConnRefused(err) {
			return ep.InstanceID, false, fmt.Errorf("%w: connection to %s refused", ErrNotRunning, u)
		}
		return ep.InstanceID, false, fmt.Errorf("event stream %s: %w", u, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var res Result
		if json.Unmarshal(data, &res) == nil && res.Error != "" {
			return ep.InstanceID, false, &StreamRefused{Status: resp.StatusCode, Kind: res.Kind, Message: res.Error}
		}
		return ep.InstanceID, false, &StreamRefused{Status: resp.StatusCode, Kind: KindInternal, Message: strings.TrimSpace(string(data))}
	}
	err = readSSE(resp.Body, func(name string, data []byte) bool {
		var ev StreamEvent
		switch name {
		case "frame":
			var f StreamFrame
			if json.Unmarshal(data, &f) != nil {
				return true
			}
			ev.Frame = &f
		case "state":
			var s StreamState
			if json.Unmarshal(data, &s) != nil {
				return true
			}
			ev.State = &s
		case "screen":
			var s StreamScreen
			if json.Unmarshal(data, &s) != nil {
				return true
			}
			ev.Screen = &s
		default:
			return true
		}
		return e.emit(ev)
	})
	if ctx.Err() != nil && e.ctx.Err() == nil {
		return ep.InstanceID, true, nil
	}
	if err == nil {
		err = errStreamEnded
	}
	return ep.InstanceID, false, err
}

// StreamRefused is a stream request the server answered with an error
// envelope (a token that is not the operator's, an unknown node).
type StreamRefused struct {
	Status  int
	Kind    Kind
	Message string
}

func (r *StreamRefused) Error() string {
	return fmt.Sprintf("the event stream was refused (HTTP %d, %s): %s", r.Status, r.Kind, r.Message)
}

// maxEventBytes bounds one event (a full screen of styled runs).
const maxEventBytes = 8 << 20

// readSSE calls ev for every event of an SSE body until it ends or ev
// returns false.
func readSSE(r io.Reader, ev func(name string, data []byte) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventBytes)
	var name string
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if data.Len() > 0 {
				if !ev(cmpOr(name, "message"), bytes.TrimSuffix(data.Bytes(), []byte("\n"))) {
					return nil
				}
			}
			name = ""
			data.Reset()
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			data.Write(value)
			data.WriteByte('\n')
		}
	}
	return sc.Err()
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func isConnRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
