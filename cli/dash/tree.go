package dash

import (
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/termsprawl/termsprawl/probe"
)

// Tree is the dashboard's semantic tree (CONTRACT §19, §22): the window,
// a list with a listitem per shown node (selected; its value the state),
// the preview's tabs, the answer buttons of the selected node's oldest
// dialog, and the input line while one is open — each with the bounds it
// is drawn at, so an agent can click it by role and name.
func (m *Model) Tree() *probe.Node {
	g := m.geometry()
	root := &probe.Node{ID: "dashboard", Role: probe.RoleWindow, Name: "termsprawl dashboard",
		Bounds: probe.Bounds{Width: m.width, Height: m.height}}
	root.Add(&probe.Node{ID: "header", Role: probe.RoleText, Name: ansi.Strip(m.header()),
		Bounds: probe.Bounds{Row: 0, Width: m.width, Height: 1}})
	list := &probe.Node{ID: "nodes", Role: probe.RoleList, Name: "nodes",
		Bounds: probe.Bounds{Row: g.listTop, Width: g.listW, Height: m.listHeight()}}
	end := min(len(m.rows), m.offset+m.listHeight())
	for i, n := range m.rows[m.offset:end] {
		st := state(n)
		if m.needsHuman(n) {
			st = "needs you"
		}
		list.Add(&probe.Node{ID: "node-" + n.Terminal, Role: probe.RoleListitem, Name: name(n), Value: st, TestID: n.Terminal,
			Bounds: probe.Bounds{Row: g.listTop + i, Width: g.listW, Height: 1},
			State:  &probe.State{Selected: n.Terminal == m.sel}})
	}
	root.Add(list)
	if !g.small {
		tabs := &probe.Node{ID: "tabs", Role: probe.RoleTablist, Name: "preview",
			Bounds: probe.Bounds{Row: g.listTop, Column: g.px, Width: g.pw, Height: 1}}
		for i, r := range g.tabX {
			tabs.Add(&probe.Node{ID: "tab-" + tabNames[i], Role: probe.RoleTab, Name: tabNames[i],
				Bounds: probe.Bounds{Row: g.listTop, Column: r[0], Width: r[1] - r[0], Height: 1},
				State:  &probe.State{Selected: i == m.tab}})
		}
		root.Add(tabs)
		if d := m.oldestDialog(); d != nil && len(g.buttons) > 0 {
			group := &probe.Node{ID: "answers", Role: probe.RoleGroup, Name: "answer " + d.ID, Label: d.Title,
				Bounds: probe.Bounds{Row: g.listTop, Column: g.buttons[0].x0, Width: g.buttons[len(g.buttons)-1].x1 - g.buttons[0].x0, Height: 1}}
			for _, b := range g.buttons {
				word := strings.TrimSpace(b.label)
				group.Add(&probe.Node{ID: "answer-" + word, Role: probe.RoleButton, Name: word,
					Bounds: probe.Bounds{Row: g.listTop, Column: b.x0, Width: b.x1 - b.x0, Height: 1}})
			}
			root.Add(group)
		}
	}
	if m.mode == modeHelp {
		root.Add(&probe.Node{ID: "help", Role: probe.RoleDialog, Name: "keys",
			Bounds: probe.Bounds{Row: g.listTop, Width: m.width, Height: min(len(Keys)+2, max(g.footer-g.listTop, 1))}})
	}
	if g.footer >= 1 {
		switch m.mode {
		case modeFilter, modeReason:
			label := "filter"
			if m.mode == modeReason {
				label = "deny reason"
			}
			root.Add(&probe.Node{ID: "input", Role: probe.RoleTextbox, Name: label, Value: m.input.Value(),
				Bounds: probe.Bounds{Row: g.footer, Width: m.width, Height: 1}, State: &probe.State{Focused: true}})
		case modeLaunch:
			for i, f := range []string{"kind", "name", "directory", "worktree", "command"} {
				root.Add(&probe.Node{ID: "launch-" + f, Role: probe.RoleTextbox, Name: f, Value: m.launch[i].Value(),
					Bounds: probe.Bounds{Row: g.footer, Width: m.width, Height: 1}, State: &probe.State{Focused: i == m.launchAt}})
			}
		default:
			if msg := m.footerText(); msg != "" {
				root.Add(&probe.Node{ID: "status", Role: probe.RoleText, Name: ansi.Strip(msg),
					Bounds: probe.Bounds{Row: g.footer, Width: m.width, Height: 1}})
			}
		}
	}
	return probe.Clip(root, m.width, m.height)
}

// footerText is the status line's text.
func (m *Model) footerText() string { return m.footer(m.geometry()) }

// treeOf is probe.Wrap's tree function.
func treeOf(tm any) *probe.Node {
	if m, ok := tm.(*Model); ok {
		return m.Tree()
	}
	return nil
}
