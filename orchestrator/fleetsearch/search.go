// Package fleetsearch is fleet search (CONTRACT §30) over what an engine
// captures of its nodes and the recordings under its state dir: the
// matcher, the bounded, ordered merge, the memory budget, the scan of
// recordings. It knows nothing of nodes or tmux: a node is read through
// Searcher.Capture.
package fleetsearch

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/tools"
)

// Fleet search (CONTRACT §30): every node's screen and whole tmux
// history, read through the control client the node already has (its own
// for a node on this machine, its host's mirror client for a node on a
// host: one command line per node, never a tmux process), and the
// recordings' text on request. Memory stays bounded: at most
// Concurrency nodes' histories are held at once (each one
// capture-pane's answer, dropped once searched), results are merged in
// node order as soon as they are ready, and a search stops capturing once
// it has more than its limit.

// Concurrency bounds the captures in flight at once.
const Concurrency = 4

// Spec is one fleet search. The tool server resolved the nodes and
// kept them to the caller's realm.
type Spec struct {
	Pattern    string
	Regex      bool
	IgnoreCase bool
	// Nodes are the node ids to search, in order.
	Nodes []string
	// OnlyNodes: Nodes was named by the caller (recordings of those
	// nodes only); else every node the caller may read.
	OnlyNodes bool
	// Recordings: also the recordings in <state>/traces; MayReadRecording
	// keeps them to the caller's realm (nil: all).
	Recordings       bool
	MayReadRecording func(meta tools.TraceMeta) bool
	// Since drops recorded lines older than it (zero: none).
	Since time.Time
	Limit int
}

// matcher finds the pattern in a line: the byte range of the first match.
type matcher func(line string) (start, end int, ok bool)

// newMatcher compiles a search's pattern.
func newMatcher(pattern string, regex, ignoreCase bool) (matcher, error) {
	if !regex && !ignoreCase {
		return func(l string) (int, int, bool) {
			i := strings.Index(l, pattern)
			return i, i + len(pattern), i >= 0
		}, nil
	}
	expr := pattern
	if !regex {
		expr = regexp.QuoteMeta(pattern)
	}
	if ignoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, tools.Errorf(tools.KindUsage, "pattern %q is not a Go regular expression: %v (pass regex: false to search for the text itself)", pattern, err)
	}
	return func(l string) (int, int, bool) {
		m := re.FindStringIndex(l)
		if m == nil {
			return 0, 0, false
		}
		return m[0], m[1], true
	}, nil
}

// MemoryBudget bounds the captured histories that searches hold
// at once, across every search (CONTRACT §31); a node past it is skipped
// with the budget's reason, the rest searched.
const MemoryBudget = 64 << 20

// Estimate is what one node's capture is reserved before it is
// read: a full history (the servers' history-limit of 10,000 lines) and
// a screen, each line a string of up to 256 bytes with its header.
const Estimate = (10_000 + 200) * (256 + lineOverhead)

// lineOverhead is a captured line's cost besides its bytes: the string
// header in the reply's slice and the allocation's rounding.
const lineOverhead = 32

// Capture is what an engine read of one node: its name, its whole
// history and screen as joined lines (capture-pane -J), the history's
// size in rows and the pane's width.
type Capture struct {
	Name       string
	Lines      []string
	Hist, Cols int
}

// Searcher runs fleet searches for one engine.
type Searcher struct {
	// Traces is the folder of recordings (<state>/traces).
	Traces string
	// Memory is the budget the captures held at once are taken from.
	Memory *tools.MemoryBudget
	// Capture reads one node: it calls take (which reserves the capture's
	// memory) once it knows the node, before it reads; an error it
	// returns skips the node with the error's text.
	Capture func(ctx context.Context, id string, take func() error) (Capture, error)
}

// nodeFinds is one node's part of a search.
type nodeFinds struct {
	matches []tools.FleetMatch
	skip    *tools.SearchSkip
}

// Run runs a fleet search.
func (s *Searcher) Run(ctx context.Context, spec Spec) (tools.FleetSearchResult, error) {
	limit := cmp.Or(spec.Limit, tools.DefaultSearchLimit)
	match, err := newMatcher(spec.Pattern, spec.Regex, spec.IgnoreCase)
	if err != nil {
		return tools.FleetSearchResult{}, err
	}
	res := tools.FleetSearchResult{Matches: []tools.FleetMatch{}, Limit: limit}
	add := func(f nodeFinds) {
		if f.skip != nil {
			res.Skipped = append(res.Skipped, *f.skip)
		}
		for _, m := range f.matches {
			if len(res.Matches) == limit {
				res.Truncated = true
				return
			}
			res.Matches = append(res.Matches, m)
		}
	}
	// The nodes, Concurrency at a time, merged in order. The
	// dispatcher runs at most 2×Concurrency ahead of the merge, so
	// a slow node holds back at most that many finished results.
	ids := spec.Nodes
	type finished struct {
		i int
		f nodeFinds
	}
	slots := make([]*nodeFinds, len(ids)) // the merge's own: filled from done
	done := make(chan finished, len(ids))
	next, dispatched, inflight := 0, 0, 0
	for next < len(ids) {
		for !res.Truncated && dispatched < len(ids) && inflight < Concurrency && dispatched < next+2*Concurrency {
			i := dispatched
			dispatched++
			inflight++
			go func() { done <- finished{i, s.searchNode(ctx, ids[i], match, limit+1)} }()
		}
		if inflight == 0 {
			break // cut: nothing more is dispatched
		}
		fin := <-done
		inflight--
		slots[fin.i] = &fin.f
		for next < dispatched && slots[next] != nil {
			if !res.Truncated {
				add(*slots[next])
				res.Nodes++
			}
			slots[next] = nil
			next++
		}
	}
	for ; inflight > 0; inflight-- {
		<-done // the captures still running when the limit was reached
	}
	if spec.Recordings && !res.Truncated {
		s.searchRecordings(ctx, spec, match, limit, &res, add)
	}
	return res, nil
}

// searchNode reads one node's history and screen through Capture.
func (s *Searcher) searchNode(ctx context.Context, id string, match matcher, most int) nodeFinds {
	// The capture's reply is held whole while it is matched: reserve a
	// full history's worth, then hold what it really took.
	var g *tools.MemoryGrant
	c, err := s.Capture(ctx, id, func() error {
		var err error
		g, err = s.Memory.Take(Estimate, "fleet_search of node "+id)
		return err
	})
	if g != nil {
		defer g.Release()
	}
	if err != nil {
		return nodeFinds{skip: &tools.SearchSkip{Node: id, Reason: err.Error()}}
	}
	held := int64(0)
	for _, l := range c.Lines {
		held += int64(len(l)) + lineOverhead
	}
	g.Set(held)
	cols := max(c.Cols, 1)
	var f nodeFinds
	row := -c.Hist
	for _, l := range c.Lines {
		l = strings.TrimRight(l, " ")
		if s, e, ok := match(l); ok {
			src := tools.MatchHistory
			if row >= 0 {
				src = tools.MatchScreen
			}
			text, cut := clipAround(l, s, e)
			f.matches = append(f.matches, tools.FleetMatch{Node: id, Name: c.Name, Source: src, Line: row, Text: text, Cut: cut})
			if len(f.matches) >= most {
				break
			}
		}
		row += wrappedRows(l, cols)
	}
	return f
}

// wrappedRows is how many rows of a pane cols wide a joined line takes.
func wrappedRows(l string, cols int) int {
	if len(l) <= cols {
		return 1 // a character is never wider than its bytes
	}
	w := ansi.StringWidth(l)
	return max(1, (w+cols-1)/cols)
}

// clipAround cuts a line to tools.MaxMatchText characters around the
// byte range [s, e) of its match.
func clipAround(l string, s, e int) (string, bool) {
	if utf8.RuneCountInString(l) <= tools.MaxMatchText {
		return l, false
	}
	r := []rune(l)
	rs := utf8.RuneCountInString(l[:s])
	re := rs + utf8.RuneCountInString(l[s:e])
	from := max(0, rs-(tools.MaxMatchText-(re-rs))/2)
	to := min(len(r), from+tools.MaxMatchText)
	from = max(0, to-tools.MaxMatchText)
	return string(r[from:to]), true
}

// recordingDir is one recording found for a search.
type recordingDir struct {
	dir  string
	meta tools.TraceMeta
}

// searchRecordings searches the recordings, newest first.
func (s *Searcher) searchRecordings(ctx context.Context, spec Spec, match matcher, limit int, res *tools.FleetSearchResult, add func(nodeFinds)) {
	root := s.Traces
	ents, err := os.ReadDir(root)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			res.Skipped = append(res.Skipped, tools.SearchSkip{Recording: root, Reason: err.Error()})
		}
		return
	}
	var recs []recordingDir
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		m, err := record.ReadMeta(dir)
		if err != nil {
			continue // not a recording (or one being written): skipped
		}
		if spec.OnlyNodes && !slices.Contains(spec.Nodes, m.Node) {
			continue
		}
		if spec.MayReadRecording != nil && !spec.MayReadRecording(m) {
			continue
		}
		if !spec.Since.IsZero() && !m.End.IsZero() && m.End.Before(spec.Since) {
			continue
		}
		recs = append(recs, recordingDir{dir: dir, meta: m})
	}
	slices.SortFunc(recs, func(a, b recordingDir) int { return b.meta.Start.Compare(a.meta.Start) })
	for _, r := range recs {
		if res.Truncated || ctx.Err() != nil {
			return
		}
		res.Recordings++
		add(searchRecording(ctx, r, spec.Since, match, limit+1))
	}
}

// searchRecording reads one cast, a line at a time.
func searchRecording(ctx context.Context, r recordingDir, since time.Time, match matcher, most int) nodeFinds {
	f, _, err := tools.OpenRegular(filepath.Join(r.dir, record.CastFile))
	if err != nil {
		return nodeFinds{skip: &tools.SearchSkip{Node: r.meta.Node, Recording: r.dir, Reason: err.Error()}}
	}
	defer f.Close()
	var out nodeFinds
	_, err = record.ScanText(f, func(l record.TextLine) bool {
		if ctx.Err() != nil {
			return false
		}
		at := r.meta.Start.Add(time.Duration(l.US) * time.Microsecond)
		if !since.IsZero() && at.Before(since) {
			return true
		}
		s, e, ok := match(l.Text)
		if !ok {
			return true
		}
		text, cut := clipAround(l.Text, s, e)
		out.matches = append(out.matches, tools.FleetMatch{Node: r.meta.Node, Source: tools.MatchRecording, Line: l.N,
			Time: at.UTC().Format("2006-01-02T15:04:05.000Z07:00"), Recording: r.dir, Text: text, Cut: cut})
		return len(out.matches) < most
	})
	if err != nil {
		out.skip = &tools.SearchSkip{Node: r.meta.Node, Recording: r.dir, Reason: err.Error()}
	}
	return out
}
