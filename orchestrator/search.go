package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Fleet search (CONTRACT §30): every node's screen and whole tmux
// history, read through the control client the node already has (its own
// for a node on this machine, its host's mirror client for a node on a
// host: one command line per node, never a tmux process), and the
// recordings' text on request. Memory stays bounded: at most
// SearchConcurrency nodes' histories are held at once (each one
// capture-pane's answer, dropped once searched), results are merged in
// node order as soon as they are ready, and a search stops capturing once
// it has more than its limit.

// SearchConcurrency bounds the captures in flight at once.
const SearchConcurrency = 4

// SearchSpec is one fleet search. The tool server resolved the nodes and
// kept them to the caller's realm.
type SearchSpec struct {
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
		return nil, usage("pattern %q is not a Go regular expression: %v (pass regex: false to search for the text itself)", pattern, err)
	}
	return func(l string) (int, int, bool) {
		m := re.FindStringIndex(l)
		if m == nil {
			return 0, 0, false
		}
		return m[0], m[1], true
	}, nil
}

// testHookSearchCommand, if set, runs for each command line a search
// sends to tmux (benchmarks count them).
var testHookSearchCommand func()

// testHookSearchCaptured, if set, runs after a node's capture arrived,
// before it is searched (tests widen the window with it).
var testHookSearchCaptured func(id string)

// nodeFinds is one node's part of a search.
type nodeFinds struct {
	matches []tools.FleetMatch
	skip    *tools.SearchSkip
}

// Search runs a fleet search.
func (o *Orchestrator) Search(ctx context.Context, spec SearchSpec) (tools.FleetSearchResult, error) {
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
	// The nodes, SearchConcurrency at a time, merged in order. The
	// dispatcher runs at most 2×SearchConcurrency ahead of the merge, so
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
		for !res.Truncated && dispatched < len(ids) && inflight < SearchConcurrency && dispatched < next+2*SearchConcurrency {
			i := dispatched
			dispatched++
			inflight++
			go func() { done <- finished{i, o.searchNode(ctx, ids[i], match, limit+1)} }()
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
		o.searchRecordings(ctx, spec, match, limit, &res, add)
	}
	return res, nil
}

// searchNode reads one node's history and screen: one command line (the
// sizes and capture-pane -J of the whole history) on its control client.
func (o *Orchestrator) searchNode(ctx context.Context, id string, match matcher, most int) nodeFinds {
	n, err := o.lookup(id)
	if err != nil {
		return nodeFinds{skip: &tools.SearchSkip{Node: id, Reason: err.Error()}}
	}
	if testHookSearchCommand != nil {
		testHookSearchCommand()
	}
	outs, err := n.client.RunMany(ctx,
		tmuxctl.Command("display-message", "-p", "-t", n.pane, "#{history_size} #{pane_width}"),
		tmuxctl.Command("capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", n.pane))
	if err == nil && (len(outs) != 2 || len(outs[0]) != 1) {
		err = fmt.Errorf("unexpected reply %d blocks", len(outs))
	}
	if err != nil {
		return nodeFinds{skip: &tools.SearchSkip{Node: id, Reason: n.tmuxErr("search", err).Error()}}
	}
	if testHookSearchCaptured != nil {
		testHookSearchCaptured(id)
	}
	var hist, cols int
	fmt.Sscanf(outs[0][0], "%d %d", &hist, &cols)
	cols = max(cols, 1)
	var f nodeFinds
	row := -hist
	for _, l := range outs[1] {
		l = strings.TrimRight(l, " ")
		if s, e, ok := match(l); ok {
			src := tools.MatchHistory
			if row >= 0 {
				src = tools.MatchScreen
			}
			text, cut := clipAround(l, s, e)
			f.matches = append(f.matches, tools.FleetMatch{Node: id, Name: n.meta.Name, Source: src, Line: row, Text: text, Cut: cut})
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
func (o *Orchestrator) searchRecordings(ctx context.Context, spec SearchSpec, match matcher, limit int, res *tools.FleetSearchResult, add func(nodeFinds)) {
	root := filepath.Join(o.cfg.StateDir, TracesDir)
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
