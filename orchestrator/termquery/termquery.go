// Package termquery is terminal_query's text side (CONTRACT §11): the
// matches of a text or regex on the published rows, each as cells of the
// mirror's layout (graphemes and wide characters), the refs handed out
// and the stale-ref check of a ref handed back. It knows nothing of
// nodes: the engine hands in the rows and whether a row changed.
package termquery

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/charmbracelet/x/ansi"

	"github.com/termsprawl/termsprawl/tools"
)

// MaxRefs bounds the refs a node remembers for the stale-ref check.
const MaxRefs = 4096

// Refs are the refs terminal_query handed out for one node, with the
// text each named.
type Refs struct {
	mu    sync.Mutex        // guards refs and order
	refs  map[string]string // ref → the text it named
	order []string          // refs oldest first, at most MaxRefs
}

func usage(format string, a ...any) error { return tools.Errorf(tools.KindUsage, format, a...) }

// RowCells maps a published row to cells: the byte offset in line where
// each cell's text starts (a wide character's second cell has none), as
// the mirror lays the row out. cellAt[i] is the cell of byte i of line.
func RowCells(line string) (cellAt []int, cells int) {
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

// Lines finds text (or re) in each row, in reading order.
func Lines(lines []string, rev uint64, text string, re *regexp.Regexp) []tools.QueryMatch {
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
			cellAt, _ = RowCells(line)
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

// CellText is the text of length cells from (row, col) of lines.
func CellText(lines []string, row, col, length int) string {
	if row >= len(lines) {
		return ""
	}
	line := lines[row]
	cellAt, _ := RowCells(line)
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

// Remember keeps the text of each ref for the stale-ref check.
func (r *Refs) Remember(ms []tools.QueryMatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refs == nil {
		r.refs = map[string]string{}
	}
	for _, m := range ms {
		if _, ok := r.refs[m.Ref]; !ok {
			r.order = append(r.order, m.Ref)
		}
		r.refs[m.Ref] = m.Text
	}
	if extra := len(r.order) - MaxRefs; extra > 0 {
		for _, old := range r.order[:extra] {
			delete(r.refs, old)
		}
		r.order = append([]string(nil), r.order[extra:]...)
	}
}

// Resolve checks a ref against the screen (lines, at revision cur): it
// still names its text when its row has not changed since its revision
// (rowChanged tells; an error: the revision is older than the kept
// history), or when the text the query found is still at that place.
// Else it is stale.
func (r *Refs) Resolve(s string, lines []string, cur uint64, rowChanged func(rev uint64, row int) (bool, error)) (tools.Cell, error) {
	ref, err := tools.ParseRef(s)
	if err != nil {
		return tools.Cell{}, usage("%v; pass a ref exactly as terminal_query returned it", err)
	}
	stale := func(why string) error {
		return tools.Errorf(tools.KindConflict, "stale-ref: %s is %s; call terminal_query again and use its new ref", s, why).
			WithDetails("reason", "stale-ref").WithDetails("ref", s)
	}
	if ref.Revision > cur {
		return tools.Cell{}, usage("ref %s is from revision %d, newer than the terminal's %d: pass a ref terminal_query returned for this terminal", s, ref.Revision, cur)
	}
	if ref.Row >= len(lines) {
		return tools.Cell{}, stale(fmt.Sprintf("outside the screen now (%d rows)", len(lines)))
	}
	r.mu.Lock()
	text, known := r.refs[s]
	r.mu.Unlock()
	if known {
		if CellText(lines, ref.Row, ref.Column, ref.Length) != text {
			return tools.Cell{}, stale(fmt.Sprintf("no longer at its place (it named %q)", text))
		}
		return tools.Cell{Row: ref.Row, Column: ref.Column}, nil
	}
	// A ref this orchestrator did not hand out (or forgot): valid only if
	// its row is unchanged since its revision.
	changed, err := rowChanged(ref.Revision, ref.Row)
	if err != nil {
		return tools.Cell{}, stale("older than the kept history")
	}
	if changed {
		return tools.Cell{}, stale("on a row that changed since")
	}
	return tools.Cell{Row: ref.Row, Column: ref.Column}, nil
}
