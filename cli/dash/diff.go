package dash

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/termsprawl/termsprawl/tools"
)

// The diff tab (CONTRACT §19, §21): the selected node's worktree_diff,
// fetched by a tea.Cmd (never on Update's or View's path), re-fetched
// when the node's state or its worktree's status changes, and on `u`.

// diffState is what the diff tab shows.
type diffState struct {
	node    string // the node it is of ("" none yet)
	seq     int    // the latest fetch: older answers are dropped
	loading bool
	got     bool // an answer arrived
	val     tools.WorktreeDiff
	err     string
	lines   []string // the diff text's lines
	scroll  int      // the first shown line of lines
}

// worktreeOf is node id's worktree, as the stream says (nil: none).
func (m *Model) worktreeOf(id string) *tools.WorktreeState {
	if n, ok := m.node(id); ok {
		return n.Worktree
	}
	return nil
}

// shortBranch is a worktree's branch without termsprawl's prefix.
func shortBranch(w *tools.WorktreeState) string {
	return tools.VisibleLine(strings.TrimPrefix(w.Branch, "termsprawl/"))
}

// loadDiff fetches the selected node's diff when the diff tab shows.
func (m *Model) loadDiff() tea.Cmd {
	if m.tab != tabDiff || m.sel == "" {
		return nil
	}
	id := m.sel
	if m.diff.node != id {
		m.diff = diffState{node: id, seq: m.diff.seq}
	}
	if m.worktreeOf(id) == nil {
		return nil // "no worktree": nothing to ask
	}
	m.diff.seq++
	m.diff.loading = true
	seq := m.diff.seq
	return m.call("", "worktree_diff", map[string]any{"node": id}, func(m *Model, res tools.Result) {
		if m.diff.node != id || m.diff.seq != seq {
			return // the selection moved or a newer fetch went out
		}
		m.diff.loading, m.diff.got = false, true
		if !res.OK {
			m.diff.err = failText("worktree_diff", res)
			return
		}
		var d tools.WorktreeDiff
		if err := tools.DecodeValue(res.Value, &d); err != nil {
			m.diff.err = "worktree_diff: " + err.Error()
			return
		}
		m.diff.err, m.diff.val = "", d
		text := strings.TrimRight(strings.ReplaceAll(d.Diff, "\t", "    "), "\n")
		m.diff.lines = nil
		if text != "" {
			m.diff.lines = strings.Split(text, "\n")
			for i, l := range m.diff.lines {
				m.diff.lines[i] = tools.VisibleLine(l) // file contents are outside text (CONTRACT §26)
			}
		}
		m.diff.scroll = min(m.diff.scroll, max(len(m.diff.lines)-1, 0))
	})
}

// diffChanged reports whether the shown node changed in a way that
// changes its diff: its state (a turn ended) or its worktree's status.
func diffChanged(before, after tools.StreamNode) bool {
	if state(before) != state(after) {
		return true
	}
	b, a := before.Worktree, after.Worktree
	if (b == nil) != (a == nil) {
		return true
	}
	return b != nil && (b.Dirty != a.Dirty || b.Ahead != a.Ahead || b.Behind != a.Behind)
}

// scrollDiff moves the diff tab's view by d lines.
func (m *Model) scrollDiff(d int) {
	page := max(m.geometry().ph-3, 1)
	m.diff.scroll = max(0, min(m.diff.scroll+d, max(len(m.diff.lines)-page, 0)))
}

// worktreeLine is the preview header of a worktree node: branch, base,
// dirty, ahead and behind.
func (m *Model) worktreeLine(w *tools.WorktreeState) string {
	parts := []string{m.style("#5fafff", true).Render("⎇ " + tools.VisibleLine(w.Branch))}
	if w.Base != "" {
		parts = append(parts, "from "+tools.VisibleLine(w.Base))
	}
	if w.Checked == "" {
		parts = append(parts, m.style("#808080", false).Render("status not read yet"))
	} else {
		if w.Dirty {
			parts = append(parts, m.style("#ffaf00", true).Render("dirty"))
		} else {
			parts = append(parts, "clean")
		}
		parts = append(parts, fmt.Sprintf("%d ahead", w.Ahead), fmt.Sprintf("%d behind", w.Behind))
	}
	return " " + strings.Join(parts, " · ")
}

// diffLines draws the diff tab in h rows.
func (m *Model) diffLines(n tools.StreamNode, h int) []string {
	if n.Worktree == nil {
		return []string{"", fmt.Sprintf(" %s has no worktree: launch with a worktree (n, worktree field; termsprawl new --worktree)", name(n))}
	}
	ds := m.diff
	if ds.node != n.Terminal || !ds.got {
		return []string{"", " loading the diff…"}
	}
	if ds.err != "" {
		return []string{"", " " + ds.err, "", " u tries again"}
	}
	d := ds.val
	stat := fmt.Sprintf(" %d files changed, %s %s against %s", d.Files,
		m.style("#5fd75f", false).Render(fmt.Sprintf("+%d", d.Insertions)),
		m.style("#ff5f5f", false).Render(fmt.Sprintf("-%d", d.Deletions)), against(n.Worktree.Base, d.From))
	if len(d.Turns) > 0 {
		stat += fmt.Sprintf(" · %d turns recorded", len(d.Turns))
	}
	if ds.loading {
		stat += " · refreshing…"
	}
	out := []string{stat}
	if d.Cut != "" {
		out = append(out, m.style("#ffaf00", true).Render(" cut: "+tools.VisibleLine(d.Cut)))
	}
	if len(ds.lines) == 0 {
		return append(out, "", " no changes against the base")
	}
	rows := max(h-len(out)-1, 1)
	end := min(ds.scroll+rows, len(ds.lines))
	for _, l := range ds.lines[ds.scroll:end] {
		out = append(out, m.diffLine(l))
	}
	more := fmt.Sprintf(" lines %d–%d of %d · pgup/pgdn scroll · u refresh", ds.scroll+1, end, len(ds.lines))
	return append(out, m.style("#808080", false).Render(more))
}

// against names what the diff is against: the base, and the commit
// (short) it was at.
func against(base, from string) string {
	if len(from) > 7 {
		from = from[:7]
	}
	switch {
	case base == "":
		return from
	case from == "" || strings.HasPrefix(base, from):
		return base
	}
	return base + " (" + from + ")"
}

// diffLine styles one line of a unified diff.
func (m *Model) diffLine(l string) string {
	switch {
	case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "diff --git "):
		return m.style("", true).Render(l)
	case strings.HasPrefix(l, "@@"):
		return m.style("#5fafff", false).Render(l)
	case strings.HasPrefix(l, "+"):
		return m.style("#5fd75f", false).Render(l)
	case strings.HasPrefix(l, "-"):
		return m.style("#ff5f5f", false).Render(l)
	}
	return l
}
