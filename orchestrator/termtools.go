package orchestrator

import (
	"context"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/orchestrator/termio"

	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// termwright's terminal tools (CONTRACT §11): capabilities, query, the
// mouse, raw bytes.

// Capabilities says what the terminal and its program support now.
func (o *Orchestrator) Capabilities(ctx context.Context, id string) (tools.Capabilities, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.Capabilities{}, err
	}
	n.observe(ctx)
	snap := n.snapshot()
	status, _, _ := n.state()
	labels, missing := n.logLabels()
	info := n.info(0)
	return tools.Capabilities{
		Terminal: id, Columns: snap.Columns, Rows: snap.Rows, Revision: snap.Revision, Status: status,
		Modes: snap.Modes, Mouse: mouseModeOf(n.scr.Modes()), SemanticTree: n.semanticAvailability(),
		Recording: info.Recording != nil, Logs: labels, LogsMissing: missing, Crash: n.crashReport(),
	}, nil
}

// maxRefs bounds the refs a node remembers for the stale-ref check.
const maxRefs = 4096

// QuerySpec is what terminal_query looks for: Text or Pattern, and
// optionally only the Nth match (1-based).
type QuerySpec struct {
	Text    string `json:"text"`
	Pattern string `json:"pattern"`
	Nth     int    `json:"nth"`
	// Locator finds nodes of the semantic tree instead (CONTRACT §22).
	Locator *tools.SemanticLocator `json:"locator"`
}

// Query finds text or a regex on the visible screen.
func (o *Orchestrator) Query(ctx context.Context, id string, q QuerySpec) (tools.QueryResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.QueryResult{}, err
	}
	if q.Locator != nil {
		return n.querySemantic(id, *q.Locator)
	}
	var re *regexp.Regexp
	if q.Pattern != "" {
		if re, err = regexp.Compile(q.Pattern); err != nil {
			return tools.QueryResult{}, usage("pattern %q is not a valid Go RE2 regular expression: %v", q.Pattern, err)
		}
	} else if q.Text == "" {
		return tools.QueryResult{}, usage("give text or pattern to find")
	}
	n.observe(ctx)
	snap := n.snapshot()
	res := tools.QueryResult{Terminal: id, Revision: snap.Revision, Matches: queryLines(snap.Lines, snap.Revision, q.Text, re)}
	if q.Nth > 0 {
		if q.Nth > len(res.Matches) {
			res.Matches = []tools.QueryMatch{}
		} else {
			res.Matches = res.Matches[q.Nth-1 : q.Nth]
		}
	}
	n.rememberRefs(res.Matches)
	return res, nil
}

// rowCells maps a published row to cells: the byte offset in line where
// each cell's text starts (a wide character's second cell has none), as
// the mirror lays the row out. cellAt[i] is the cell of byte i of line.
func rowCells(line string) (cellAt []int, cells int) {
	cellAt = make([]int, len(line)+1)
	if isASCII(line) {
		// One byte, one cell: the common case needs no grapheme walk.
		for i := range cellAt {
			cellAt[i] = i
		}
		return cellAt, len(line)
	}
	x := 0
	rest := line
	for len(rest) > 0 {
		cluster, w := ansi.FirstGraphemeCluster(rest, ansi.GraphemeWidth)
		start := len(line) - len(rest)
		for i := range len(cluster) {
			cellAt[start+i] = x
		}
		rest = rest[len(cluster):]
		x += max(w, 0)
	}
	cellAt[len(line)] = x
	return cellAt, x
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// queryLines finds text (or re) in each row, in reading order.
func queryLines(lines []string, rev uint64, text string, re *regexp.Regexp) []tools.QueryMatch {
	out := []tools.QueryMatch{}
	for row, line := range lines {
		var spans [][]int
		if re != nil {
			for _, m := range re.FindAllStringIndex(line, -1) {
				if m[1] > m[0] {
					spans = append(spans, m)
				}
			}
		} else {
			for off := 0; ; {
				i := strings.Index(line[off:], text)
				if i < 0 {
					break
				}
				spans = append(spans, []int{off + i, off + i + len(text)})
				off += i + len(text)
			}
		}
		if len(spans) == 0 {
			continue
		}
		var cellAt []int // nil: an ASCII row, one byte a cell
		if !isASCII(line) {
			cellAt, _ = rowCells(line)
		}
		for _, s := range spans {
			col, end := s[0], s[1]
			if cellAt != nil {
				col, end = cellAt[s[0]], cellAt[s[1]]
			}
			length := max(end-col, 1)
			out = append(out, tools.QueryMatch{Row: row, Column: col, Length: length, Text: line[s[0]:s[1]],
				Ref: tools.Ref{Row: row, Column: col, Length: length, Revision: rev}.String()})
		}
	}
	return out
}

// rememberRefs keeps the text of each ref for the stale-ref check.
func (n *node) rememberRefs(ms []tools.QueryMatch) {
	n.tw.mu.Lock()
	defer n.tw.mu.Unlock()
	if n.tw.refs == nil {
		n.tw.refs = map[string]string{}
	}
	for _, m := range ms {
		if _, ok := n.tw.refs[m.Ref]; !ok {
			n.tw.refOrder = append(n.tw.refOrder, m.Ref)
		}
		n.tw.refs[m.Ref] = m.Text
	}
	if extra := len(n.tw.refOrder) - maxRefs; extra > 0 {
		for _, r := range n.tw.refOrder[:extra] {
			delete(n.tw.refs, r)
		}
		n.tw.refOrder = append([]string(nil), n.tw.refOrder[extra:]...)
	}
}

// cellText is the text of length cells from (row, col) of lines.
func cellText(lines []string, row, col, length int) string {
	if row >= len(lines) {
		return ""
	}
	line := lines[row]
	cellAt, _ := rowCells(line)
	start, end := -1, len(line)
	for i := 0; i < len(line); i++ {
		if start < 0 && cellAt[i] >= col {
			start = i
		}
		if cellAt[i] >= col+length {
			end = i
			break
		}
	}
	if start < 0 {
		return ""
	}
	return line[start:end]
}

// resolveRef checks a ref against the screen: it still names its text when
// its row has not changed since its revision, or when the text the query
// found is still at that place. Else it is stale.
func (n *node) resolveRef(s string, lines []string) (tools.Cell, error) {
	ref, err := tools.ParseRef(s)
	if err != nil {
		return tools.Cell{}, usage("%v; pass a ref exactly as terminal_query returned it", err)
	}
	stale := func(why string) error {
		return tools.Errorf(tools.KindConflict, "stale-ref: %s is %s; call terminal_query again and use its new ref", s, why).
			WithDetails("reason", "stale-ref").WithDetails("ref", s)
	}
	cur := n.scr.Revision()
	if ref.Revision > cur {
		return tools.Cell{}, usage("ref %s is from revision %d, newer than the terminal's %d: pass a ref terminal_query returned for this terminal", s, ref.Revision, cur)
	}
	if ref.Row >= len(lines) {
		return tools.Cell{}, stale(fmt.Sprintf("outside the screen now (%d rows)", len(lines)))
	}
	n.tw.mu.Lock()
	text, known := n.tw.refs[s]
	n.tw.mu.Unlock()
	if known {
		if cellText(lines, ref.Row, ref.Column, ref.Length) != text {
			return tools.Cell{}, stale(fmt.Sprintf("no longer at its place (it named %q)", text))
		}
		return tools.Cell{Row: ref.Row, Column: ref.Column}, nil
	}
	// A ref this orchestrator did not hand out (or forgot): valid only if
	// its row is unchanged since its revision.
	ch, err := n.scr.ChangesSince(ref.Revision)
	if err != nil {
		return tools.Cell{}, stale("older than the kept history")
	}
	for _, r := range ch.Rows {
		if r.Row == ref.Row {
			return tools.Cell{}, stale("on a row that changed since")
		}
	}
	return tools.Cell{Row: ref.Row, Column: ref.Column}, nil
}

// MouseSpec is a mouse operation's request, decoded by the tool server.
type MouseSpec struct {
	Kind      string      // click, hover, wheel, drag
	At        *tools.Cell // at, or drag's from
	To        *tools.Cell // drag's to
	Ref       string
	Button    string
	Count     int
	Modifiers []string
	DeltaY    int
	// Locator names a node of the semantic tree instead of At or Ref.
	Locator *tools.SemanticLocator
}

// Mouse sends a mouse action as real mouse reports encoded for the modes
// the program enabled, or refuses (not_run, input-mode-disabled, nothing
// sent) when it has not enabled the tracking the action needs.
func (o *Orchestrator) Mouse(ctx context.Context, id string, spec MouseSpec, wait *tools.WaitSpec) (tools.MouseResult, error) {
	a, err := mouseActionOf(spec)
	if err != nil {
		return tools.MouseResult{}, err
	}
	var res tools.MouseResult
	r, err := o.sendInput(ctx, id, "", wait, func(n *node) error {
		snap := n.snapshot()
		if spec.Locator != nil || strings.HasPrefix(spec.Ref, "semantic:") {
			c, err := n.semanticTarget(id, spec.Locator, spec.Ref)
			if err != nil {
				return err
			}
			a.At = *c
		} else if spec.Ref != "" {
			c, err := n.resolveRef(spec.Ref, snap.Lines)
			if err != nil {
				return err
			}
			a.At = c
		}
		for _, c := range []*tools.Cell{&a.At, dragTo(&a)} {
			if c != nil && (c.Row >= snap.Rows || c.Column >= snap.Columns) {
				return usage("cell {row %d, column %d} is outside the screen (%d columns x %d rows: rows 0..%d, columns 0..%d)",
					c.Row, c.Column, snap.Columns, snap.Rows, snap.Rows-1, snap.Columns-1)
			}
		}
		mm := mouseModeOf(n.scr.Modes())
		if ok, needs := a.Allowed(mm.Tracking); !ok {
			return tools.Errorf(tools.KindNotRun, "input-mode-disabled: terminal_%s needs %s and the program in %q has not enabled it (its mouse tracking is %s); nothing was sent. terminal_capabilities shows the program's mouse modes; drive it with terminal_press or terminal_type instead",
				spec.Kind, needs, id, mm.Tracking).WithDetails("reason", "input-mode-disabled").WithDetails("mouse", mm)
		}
		data, ok := termio.EncodeAction(a, mm)
		if !ok {
			return usage("the cell cannot be expressed in the program's %s mouse encoding (X10 reports stop at column and row 223); nothing was sent", mm.Encoding)
		}
		res = tools.MouseResult{Terminal: id, At: a.At, Mouse: mm, Bytes: len(data)}
		if spec.Kind == "drag" {
			to := a.To
			res.To = &to
		}
		n.noteInput("mouse", fmt.Sprintf("%s %s at %d,%d", spec.Kind, cmpOr(spec.Button, "left"), a.At.Row, a.At.Column))
		if err := n.sendRaw(ctx, data); err != nil {
			return err
		}
		n.recordInputEvent(record.InputMouse, len(data), nil) // a recording notes it by kind and size
		return nil
	})
	res.Terminal, res.Revision, res.Wait = id, r.Revision, r.Wait
	return res, err
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// dragTo is a drag's end, nil for other actions.
func dragTo(a *termio.Action) *tools.Cell {
	if a.Kind != "drag" {
		return nil
	}
	return &a.To
}

// mouseActionOf checks and translates a MouseSpec.
func mouseActionOf(spec MouseSpec) (termio.Action, error) {
	a := termio.Action{Kind: spec.Kind, Count: max(spec.Count, 1)}
	switch spec.Kind {
	case "click", "hover", "wheel", "drag":
	default:
		return a, usage("unknown mouse action %q", spec.Kind)
	}
	targets := 0
	for _, set := range []bool{spec.At != nil, spec.Ref != "", spec.Locator != nil} {
		if set {
			targets++
		}
	}
	if targets != 1 && spec.Kind != "drag" {
		return a, usage("give exactly one of \"at\" ({row, column}), \"ref\" (from terminal_query) and \"locator\" (a node of the semantic tree)")
	}
	if spec.At != nil {
		a.At = *spec.At
	}
	if spec.Kind == "drag" {
		if spec.At == nil || spec.To == nil {
			return a, usage("terminal_drag needs from and to")
		}
		a.To = *spec.To
	}
	switch spec.Button {
	case "", "left":
		a.Button = ansi.MouseLeft
	case "middle":
		a.Button = ansi.MouseMiddle
	case "right":
		a.Button = ansi.MouseRight
	default:
		return a, usage("button %q: use left, middle or right", spec.Button)
	}
	for _, m := range spec.Modifiers {
		switch m {
		case "shift":
			a.Shift = true
		case "alt":
			a.Alt = true
		case "ctrl":
			a.Ctrl = true
		default:
			return a, usage("modifier %q: use shift, alt or ctrl", m)
		}
	}
	if spec.Kind == "wheel" {
		if spec.DeltaY == 0 {
			return a, usage("delta_y must not be 0: positive scrolls down, negative up")
		}
		a.WheelDown, a.Notches = spec.DeltaY > 0, min(max(spec.DeltaY, -spec.DeltaY), tools.MaxWheelDelta)
	}
	return a, nil
}

// WriteRaw sends bytes to the program verbatim.
func (o *Orchestrator) WriteRaw(ctx context.Context, id string, data []byte, wait *tools.WaitSpec) (tools.InputResult, error) {
	if len(data) == 0 {
		return tools.InputResult{}, usage("no bytes to write: give text or base64")
	}
	r, err := o.sendInput(ctx, id, "", wait, noted(record.InputRaw, len(data), nil, func(n *node) error {
		n.noteInput("raw", fmt.Sprintf("%d bytes", len(data)))
		return n.sendRaw(ctx, data)
	}))
	r.Bytes = len(data)
	return r, err
}

// rawChunk is how many bytes one send-keys -H carries (DESIGN: ≤ 4 KB).
const rawChunk = 1024

// sendRaw writes bytes to the pane with send-keys -H: tmux passes each
// byte on as it is, with no key encoding.
func (n *node) sendRaw(ctx context.Context, data []byte) error {
	var cmds []string
	for len(data) > 0 {
		k := min(len(data), rawChunk)
		args := make([]string, 0, k+3)
		args = append(args, "-t", n.pane, "-H")
		for _, b := range data[:k] {
			args = append(args, hex.EncodeToString([]byte{b}))
		}
		cmds = append(cmds, tmuxctl.Command("send-keys", args...))
		data = data[k:]
	}
	if _, err := n.client.RunMany(ctx, cmds...); err != nil {
		return n.tmuxErr("write raw bytes", err)
	}
	return nil
}
