package node

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/orchestrator/semantic"
	"github.com/termsprawl/termsprawl/orchestrator/semstore"
	"github.com/termsprawl/termsprawl/orchestrator/termio"
	"github.com/termsprawl/termsprawl/orchestrator/termquery"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// MaxScrollbackLines bounds terminal_scrollback's answer (the newest lines
// are kept).
const MaxScrollbackLines = 2000

// QuerySpec is what terminal_query looks for: Text or Pattern, and
// optionally only the Nth match (1-based).
type QuerySpec struct {
	Text    string `json:"text"`
	Pattern string `json:"pattern"`
	Nth     int    `json:"nth"`
	// Locator finds nodes of the semantic tree instead (CONTRACT §22).
	Locator *tools.SemanticLocator `json:"locator"`
}

// Read returns the most recent output (history and screen, from tmux).
func (n *Node) Read(ctx context.Context, maxChars int) (tools.ReadResult, error) {
	id := n.Meta.ID
	if maxChars <= 0 {
		maxChars = tools.DefaultReadChars
	}
	rev := n.Scr.Revision()
	lines, err := n.Cmd().Run(ctx, tmuxctl.Command("capture-pane", "-p", "-J", "-S", "-2000", "-t", n.Pane))
	if err != nil {
		return tools.ReadResult{}, n.TmuxErr("read", err)
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	text := strings.Join(lines, "\n")
	r := []rune(text)
	res := tools.ReadResult{Terminal: id, Revision: rev}
	if len(r) > maxChars {
		r = r[len(r)-maxChars:]
		res.Truncated = true
	}
	res.Text = string(r)
	return res, nil
}

// Scrollback reads lines from tmux's history and screen. from and to use
// tmux's numbering (0 = first visible row, negative = history); nil means
// the start of history and the last visible row.
func (n *Node) Scrollback(ctx context.Context, from, to *int, search string) (tools.ScrollbackResult, error) {
	id := n.Meta.ID
	out, err := n.Cmd().Run(ctx, tmuxctl.Command("display-message", "-p", "-t", n.Pane, "#{history_size} #{pane_height}"))
	if err != nil || len(out) != 1 {
		return tools.ScrollbackResult{}, n.TmuxErr("scrollback", err)
	}
	var hist, height int
	fmt.Sscanf(out[0], "%d %d", &hist, &height)
	start, end := -hist, height-1
	if from != nil {
		start = max(*from, -hist)
	}
	if to != nil {
		end = min(*to, height-1)
	}
	if from != nil && to != nil && *from > *to {
		return tools.ScrollbackResult{}, usageErr("from %d is after to %d (history has %d lines, the screen %d rows)", *from, *to, hist, height)
	}
	res := tools.ScrollbackResult{Terminal: id, HistorySize: hist, Lines: []tools.ScrollbackLine{}}
	if start > end {
		return res, nil // the range holds no line (e.g. no history yet)
	}
	lines, err := n.Cmd().Run(ctx, tmuxctl.Command("capture-pane", "-p", "-S", strconv.Itoa(start), "-E", strconv.Itoa(end), "-t", n.Pane))
	if err != nil {
		return tools.ScrollbackResult{}, n.TmuxErr("scrollback", err)
	}
	for i, l := range lines {
		l = strings.TrimRight(l, " ")
		if search != "" && !strings.Contains(l, search) {
			continue
		}
		res.Lines = append(res.Lines, tools.ScrollbackLine{Line: start + i, Text: l})
	}
	if len(res.Lines) > MaxScrollbackLines {
		res.Lines = res.Lines[len(res.Lines)-MaxScrollbackLines:]
		res.Truncated = true
	}
	return res, nil
}

// Capabilities says what the terminal and its program support now.
func (n *Node) Capabilities(ctx context.Context) (tools.Capabilities, error) {
	id := n.Meta.ID
	n.Observe(ctx)
	snap := n.Snapshot()
	status, _, _ := n.State()
	labels, missing := n.logLabels()
	info := n.Info(0)
	return tools.Capabilities{
		Terminal: id, Columns: snap.Columns, Rows: snap.Rows, Revision: snap.Revision, Status: status,
		Modes: snap.Modes, Mouse: MouseModeOf(n.Scr.Modes()), SemanticTree: n.Sem.Availability(),
		Recording: info.Recording != nil, Logs: labels, LogsMissing: missing, Crash: n.CrashReport(),
	}, nil
}

// Query finds text or a regex on the visible screen.
func (n *Node) Query(ctx context.Context, q QuerySpec) (tools.QueryResult, error) {
	id := n.Meta.ID
	if q.Locator != nil {
		return n.Sem.Query(id, *q.Locator)
	}
	var re *regexp.Regexp
	var err error
	if q.Pattern != "" {
		if re, err = regexp.Compile(q.Pattern); err != nil {
			return tools.QueryResult{}, usageErr("pattern %q is not a valid Go RE2 regular expression: %v", q.Pattern, err)
		}
	} else if q.Text == "" {
		return tools.QueryResult{}, usageErr("give text or pattern to find")
	}
	n.Observe(ctx)
	snap := n.Snapshot()
	res := tools.QueryResult{Terminal: id, Revision: snap.Revision, Matches: termquery.Lines(snap.Lines, snap.Revision, q.Text, re)}
	if q.Nth > 0 {
		if q.Nth > len(res.Matches) {
			res.Matches = []tools.QueryMatch{}
		} else {
			res.Matches = res.Matches[q.Nth-1 : q.Nth]
		}
	}
	n.refs.Remember(res.Matches)
	return res, nil
}

// Resize sets the node's window size; the mirror follows tmux's layout
// change and reseeds. It returns once the mirror has the new size (or
// after a short bound).
func (n *Node) Resize(ctx context.Context, columns, rows int) error {
	if _, err := n.Cmd().Run(ctx, tmuxctl.Command("resize-window", "-t", "="+n.Session()+":", "-x", strconv.Itoa(columns), "-y", strconv.Itoa(rows))); err != nil {
		return n.TmuxErr("resize", err)
	}
	deadline := time.NewTimer(2 * time.Second)
	defer deadline.Stop()
	for !n.IsClosing() {
		_, changed := n.Scr.WaitState()
		if s := n.Snapshot(); s.Columns == columns && s.Rows == rows {
			break
		}
		select {
		case <-changed:
			continue
		case <-n.Closing:
		case <-deadline.C:
		case <-ctx.Done():
		}
		break
	}
	return nil
}

// Showing is one page's look at a node: while it is open the node counts
// as observed, like a wait in progress — it is woken if it sleeps and does
// not fall asleep; once every Showing of it is closed and IdleAfter passes
// unobserved, it sleeps again. A Showing never sends anything to the node.
type Showing struct {
	n    *Node
	once sync.Once

	// frames are the cells Frame hands out; only Frame's caller
	// touches them.
	frames screen.Frames
}

// Show opens a Showing of node id, waking the node if it sleeps (bounded
// by ctx). The caller must Close it.
func (n *Node) Show(ctx context.Context) *Showing {
	// Counted under idleMu, the lock decideSleep decides under: the pump
	// either sees this observer and stays awake, or decided before it and
	// observe below sees the node asleep and wakes it.
	n.idleMu.Lock()
	n.Observers.Add(1)
	n.idleMu.Unlock()
	n.Observe(ctx)
	return &Showing{n: n}
}

// Close ends the Showing (idempotent). The node may sleep IdleAfter later
// if nothing else observes it.
func (s *Showing) Close() {
	s.once.Do(func() {
		n := s.n
		n.idleMu.Lock()
		n.LastObserved.Store(time.Now().UnixNano())
		n.Observers.Add(-1)
		n.idleMu.Unlock()
	})
}

// ID is the node's id.
func (s *Showing) ID() string { return s.n.Meta.ID }

// Cells is the node's styled cell grid (a copy; see screen.Screen.Cells);
// a resting mirror is reseeded from tmux first (rest.go).
func (s *Showing) Cells() render.Grid { return s.n.Cells(context.Background()) }

// Frame is the node's styled cell grid, like Cells, and each row's stamp
// (screen.Frames.Next: equal stamps, equal cells; nil when unknown). The
// grid is valid until the Frame call after the next one, so a caller may
// compare it with the one before; it is overwritten in place after that.
// Frame is not safe for concurrent use.
func (s *Showing) Frame() (render.Grid, []uint64) {
	s.n.wakeMirror(context.Background())
	return s.frames.Next(s.n.Scr)
}

// Changed returns the node's current revision and a channel closed at its
// next revision, taken atomically.
func (s *Showing) Changed() (uint64, <-chan struct{}) { return s.n.Scr.WaitState() }

// Closing is closed when the node's life ends (it is being closed or its
// tmux session ended).
func (s *Showing) Closing() <-chan struct{} { return s.n.Closing }

// MouseModeOf is the contract's view of the mirror's mouse modes.
func MouseModeOf(m screen.Modes) tools.MouseMode {
	return termio.Modes{Tracking: m.MouseTracking, SGR: m.MouseSGR, URXVT: m.MouseURXVT, UTF8: m.MouseUTF8}.MouseMode()
}

// SendInput runs the tmux commands of an input operation, then the
// optional wait with the revision before the input as its baseline.
func (n *Node) SendInput(ctx context.Context, text string, wait *tools.WaitSpec, send func(n *Node) error) (tools.InputResult, error) {
	id := n.Meta.ID
	var c Compiled
	var err error
	if wait != nil {
		if wait.After != nil {
			return tools.InputResult{}, usageErr("an input operation's wait takes no \"after\": its baseline is the revision before the input")
		}
		if c, err = CompileWait(*wait); err != nil {
			return tools.InputResult{}, err
		}
	}
	if status, _, gone := n.State(); gone || status == tools.StatusExited {
		return tools.InputResult{}, n.WithCrash(tools.Errorf(tools.KindNotRun, "terminal %q has exited; nothing was sent", id))
	}
	// Held until the program shows that it reads (ready.go).
	n.waitReady(ctx, n.readyBy())
	n.Observe(ctx)
	pt := n.Scr.InputPoint()
	rev := pt.Revision
	n.recordInput(pt, text)
	n.Sem.MarkInput(rev) // a semantic wait after rev counts only later commits (semantic.go)
	if err := send(n); err != nil {
		return tools.InputResult{Terminal: id, Revision: rev}, err
	}
	res := tools.InputResult{Terminal: id, Revision: rev}
	if wait != nil {
		c.After = &rev
		w, err := n.WaitCompiled(ctx, c)
		if err != nil && w.Wait == "" {
			return res, err
		}
		res.Wait = &w
	}
	return res, nil
}

func usageErr(format string, a ...any) error { return tools.Errorf(tools.KindUsage, format, a...) }

// Record turns recording of a node on or off (terminal_record). Turning
// it on when it is on, or off when it is off, changes nothing and says
// where the recording is (or was).
func (n *Node) Record(ctx context.Context, on bool) (tools.RecordResult, error) {
	id := n.Meta.ID
	if !on {
		rec := n.Rec.Load()
		if rec == nil {
			return tools.RecordResult{Terminal: id, Path: n.lastRecording()}, nil
		}
		n.StopRecording()
		if err := n.saveMeta(); err != nil {
			return tools.RecordResult{}, err
		}
		return tools.RecordResult{Terminal: id, Path: rec.Dir}, nil
	}
	if rec := n.Rec.Load(); rec != nil {
		return n.recordResult(rec), nil
	}
	if status, _, gone := n.State(); gone || status == tools.StatusExited {
		return tools.RecordResult{}, tools.Errorf(tools.KindNotRun, "terminal %q has exited: there is nothing left to record", id)
	}
	var err error
	req := recStart{Reply: make(chan error, 1)}
	select {
	case n.recReq <- req:
	case <-n.Closing:
		return tools.RecordResult{}, tools.Errorf(tools.KindNotFound, "terminal %q is closing", id)
	case <-ctx.Done():
		return tools.RecordResult{}, tools.Errorf(tools.KindTimeout, "record %q: %w", id, ctx.Err())
	}
	select {
	case err = <-req.Reply:
	case <-n.Done:
		return tools.RecordResult{}, tools.Errorf(tools.KindNotFound, "terminal %q closed before its recording started", id)
	}
	if err != nil {
		return tools.RecordResult{}, err
	}
	if err := n.saveMeta(); err != nil {
		return tools.RecordResult{}, err
	}
	rec := n.Rec.Load()
	if rec == nil {
		return tools.RecordResult{}, tools.Errorf(tools.KindInternal, "the recording of %q stopped as it started (see the log)", id)
	}
	return n.recordResult(rec), nil
}

// Mark adds a marker to a node's recording (terminal_mark).
func (n *Node) Mark(label string) (tools.MarkResult, error) {
	id := n.Meta.ID
	rec := n.Rec.Load()
	if rec == nil {
		return tools.MarkResult{}, tools.Errorf(tools.KindNotRun, "terminal %q is not being recorded: turn it on with terminal_record {\"terminal\":%q,\"on\":true}", id, id).
			WithDetails("reason", "not-recording")
	}
	ms := rec.Recorder.Mark(label)
	return tools.MarkResult{Terminal: id, Label: record.ClipLabel(label), TMS: ms}, nil
}

// PublishSemantic commits a tree for node id, which must be the caller's
// own node (the tool server passes the caller's node; no other node's
// tree ever changes). A bad tree is a usage error with details.reason and
// changes nothing.
func (n *Node) PublishSemantic(raw json.RawMessage) (tools.SemanticPublished, error) {
	id := n.Meta.ID
	snap := n.Snapshot()
	root, err := semantic.Decode(raw, snap.Columns, snap.Rows)
	if err != nil {
		var se *semantic.Error
		if errors.As(err, &se) {
			return tools.SemanticPublished{}, tools.Errorf(tools.KindUsage, "semantic_publish: %w; nothing was committed", err).WithDetails("reason", se.Reason)
		}
		return tools.SemanticPublished{}, usageErr("semantic_publish: %v", err)
	}
	c := n.Sem.Add(semstore.Commit{Rev: n.Scr.Revision(), Size: len(raw), Root: root, At: time.Now()})
	n.recordSemantic(c.Rev, raw)
	return tools.SemanticPublished{Terminal: id, Revision: c.Rev, Commit: c.Seq, Nodes: len(semantic.Flatten(root))}, nil
}

// CaptureSince returns the rows changed after revision cursor.
func (n *Node) CaptureSince(ctx context.Context, cursor uint64) (tools.Changes, error) {
	id := n.Meta.ID
	n.Observe(ctx)
	ch, err := n.changesWithLogs(cursor)
	if err != nil {
		return tools.Changes{}, RevisionErr(id, "cursor", cursor, err)
	}
	ch.Semantic = n.Sem.Changes(cursor)
	return ch, nil
}

// Wait waits on the node; a wait that timed out is the contract's
// timeout error, with the result.
func (n *Node) Wait(ctx context.Context, spec tools.WaitSpec) (tools.WaitResult, error) {
	id := n.Meta.ID
	r, err := n.WaitFor(ctx, spec)
	if err != nil {
		return r, err
	}
	if r.TimedOut {
		return r, TimeoutError(id, r)
	}
	return r, nil
}

// Mouse sends a mouse action a (spec as the caller asked it) as real mouse
// reports encoded for the modes the program enabled, or refuses
// (not_run, input-mode-disabled, nothing sent) when it has not enabled
// the tracking the action needs. It is an input operation's send
// (SendInput).
func (n *Node) Mouse(ctx context.Context, spec termio.MouseSpec, a termio.Action) (tools.MouseResult, error) {
	id := n.Meta.ID
	var res tools.MouseResult
	snap := n.Snapshot()
	if spec.Locator != nil || strings.HasPrefix(spec.Ref, "semantic:") {
		c, err := n.Sem.Target(id, spec.Locator, spec.Ref)
		if err != nil {
			return res, err
		}
		a.At = *c
	} else if spec.Ref != "" {
		c, err := n.resolveRef(spec.Ref, snap.Lines)
		if err != nil {
			return res, err
		}
		a.At = c
	}
	for _, c := range []*tools.Cell{&a.At, a.DragTo()} {
		if c != nil && (c.Row >= snap.Rows || c.Column >= snap.Columns) {
			return res, usageErr("cell {row %d, column %d} is outside the screen (%d columns x %d rows: rows 0..%d, columns 0..%d)",
				c.Row, c.Column, snap.Columns, snap.Rows, snap.Rows-1, snap.Columns-1)
		}
	}
	mm := MouseModeOf(n.Scr.Modes())
	if ok, needs := a.Allowed(mm.Tracking); !ok {
		return res, tools.Errorf(tools.KindNotRun, "input-mode-disabled: terminal_%s needs %s and the program in %q has not enabled it (its mouse tracking is %s); nothing was sent. terminal_capabilities shows the program's mouse modes; drive it with terminal_press or terminal_type instead",
			spec.Kind, needs, id, mm.Tracking).WithDetails("reason", "input-mode-disabled").WithDetails("mouse", mm)
	}
	data, ok := termio.EncodeAction(a, mm)
	if !ok {
		return res, usageErr("the cell cannot be expressed in the program's %s mouse encoding (X10 reports stop at column and row 223); nothing was sent", mm.Encoding)
	}
	res = tools.MouseResult{Terminal: id, At: a.At, Mouse: mm, Bytes: len(data)}
	if spec.Kind == "drag" {
		to := a.To
		res.To = &to
	}
	n.NoteInput("mouse", fmt.Sprintf("%s %s at %d,%d", spec.Kind, cmp.Or(spec.Button, "left"), a.At.Row, a.At.Column))
	if err := n.SendRaw(ctx, data); err != nil {
		return res, err
	}
	n.RecordInputEvent(record.InputMouse, len(data), nil) // a recording notes it by kind and size
	return res, nil
}
