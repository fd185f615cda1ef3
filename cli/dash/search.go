package dash

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/termsprawl/termsprawl/tools"
)

// The dashboard's search (CONTRACT §30): s asks for a text, fleet_search
// looks for it in every node's screen and whole history, the results
// list replaces the preview; j/k move, enter selects the match's node,
// esc goes back. Everything shown comes from the nodes: VisibleLine.

// searchState is the last search and its results.
type searchState struct {
	pattern   string
	matches   []tools.FleetMatch
	truncated bool
	nodes     int
	at        int  // the selected result
	loading   bool // the call is out
	err       string
}

// startSearch opens the search prompt.
func (m *Model) startSearch() tea.Cmd {
	m.mode = modeSearchPrompt
	m.input.Prompt, m.input.Placeholder = "search every node: ", "a text (enter: search, esc: cancel)"
	m.input.SetValue(m.search.pattern)
	return m.input.Focus()
}

// searchKey handles a key of the search prompt or the results.
func (m *Model) searchKey(k tea.KeyPressMsg) tea.Cmd {
	key := k.String()
	if m.mode == modeSearchPrompt {
		switch key {
		case "enter":
			p := m.input.Value()
			if strings.TrimSpace(p) == "" {
				m.mode, m.message = modeNormal, "search cancelled: no text"
				return nil
			}
			m.mode = modeSearch
			m.search = searchState{pattern: p, loading: true}
			return m.call("", "fleet_search", map[string]any{"pattern": p, "ignore_case": true}, func(m *Model, res tools.Result) {
				if m.search.pattern != p {
					return // an older search's answer
				}
				m.search.loading = false
				if !res.OK {
					m.search.err = failText("search", res)
					return
				}
				var r tools.FleetSearchResult
				if err := json.Unmarshal(res.Value, &r); err != nil {
					m.search.err = "search: " + err.Error()
					return
				}
				m.search.matches, m.search.truncated, m.search.nodes = r.Matches, r.Truncated, r.Nodes
			})
		case "esc":
			m.mode, m.message = modeNormal, "search cancelled"
			return nil
		}
		m.input.update(k)
		return nil
	}
	switch key {
	case "esc", "q":
		m.mode = modeNormal
	case "j", "down":
		m.search.at = min(m.search.at+1, max(len(m.search.matches)-1, 0))
	case "k", "up":
		m.search.at = max(m.search.at-1, 0)
	case "s", "/":
		return m.startSearch()
	case "enter":
		if m.search.at < len(m.search.matches) {
			mt := m.search.matches[m.search.at]
			m.mode = modeNormal
			if _, ok := m.node(mt.Node); !ok {
				m.message = fmt.Sprintf("node %s is gone", tools.VisibleLine(mt.Node))
				return nil
			}
			if m.filter != "" {
				m.filter = "" // the node may be filtered out
				m.resort()
			}
			m.selectNode(mt.Node)
			m.message = fmt.Sprintf("%s line %d: %s", tools.VisibleLine(cmp.Or(mt.Name, mt.Node)), mt.Line, tools.VisibleLine(mt.Text))
		}
	}
	return nil
}

// searchLines are the results, in the preview (or the list when small).
func (m *Model) searchLines(height int) []string {
	s := m.search
	head := fmt.Sprintf(" search %q", tools.VisibleLine(s.pattern))
	switch {
	case s.loading:
		return []string{head, "", " searching every node's history…"}
	case s.err != "":
		return []string{head, "", " " + tools.VisibleLine(s.err)}
	case len(s.matches) == 0:
		return []string{head, "", fmt.Sprintf(" no line matches in %d nodes", s.nodes)}
	}
	head += fmt.Sprintf(": %d matches", len(s.matches))
	if s.truncated {
		head += " (more were cut)"
	}
	out := []string{head}
	rows := max(height-1, 1)
	first := max(0, min(s.at-rows/2, len(s.matches)-rows))
	for i := first; i < len(s.matches) && len(out) <= rows; i++ {
		mt := s.matches[i]
		l := fmt.Sprintf(" %s:%d: %s", tools.VisibleLine(cmp.Or(mt.Name, mt.Node)), mt.Line, tools.VisibleLine(mt.Text))
		if i == s.at {
			l = m.paint(l, sty{reverse: true})
		}
		out = append(out, l)
	}
	return out
}
