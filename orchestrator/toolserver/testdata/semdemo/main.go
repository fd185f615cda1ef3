// Command semdemo is the semantic tree tests' Bubble Tea v2 program: a
// dialog with two buttons, a checkbox, a text field and a list, published
// with the probe package. It shows on its last row what it got (the last
// mouse report and what it did), so tests can see real input arrive.
//
// With -noprobe it publishes nothing (a program without a probe); with
// -wait it starts publishing when P is pressed. D deletes the last list
// item (outside the text field).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/termsprawl/termsprawl/probe"
)

type model struct {
	width, height int
	focus         string // "name", or ""
	name          string
	agree         bool
	items         []string
	selected      int
	last          string
	layout        map[string]probe.Bounds
	publishing    bool
}

func (m *model) Init() tea.Cmd { return nil }

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyPressMsg:
		switch k := msg.String(); {
		case k == "ctrl+c":
			return m, tea.Quit
		case m.focus == "name" && k == "ctrl+u":
			m.name = ""
		case m.focus == "name" && k == "end":
		case m.focus == "name" && k == "backspace":
			if r := []rune(m.name); len(r) > 0 {
				m.name = string(r[:len(r)-1])
			}
		case m.focus == "name" && msg.Text != "":
			m.name += msg.Text
		case k == "space" || k == " ":
			m.agree = !m.agree
		case k == "P":
			m.publishing = true
		case k == "d" && len(m.items) > 0:
			m.items = m.items[:len(m.items)-1]
		}
		m.last = "key " + msg.String()
	case tea.MouseClickMsg:
		mo := msg.Mouse()
		m.last = fmt.Sprintf("click %d,%d", mo.Y, mo.X)
		m.clickAt(mo.Y, mo.X)
	case tea.MouseMotionMsg:
		mo := msg.Mouse()
		m.last = fmt.Sprintf("hover %d,%d", mo.Y, mo.X)
	case tea.MouseWheelMsg:
		mo := msg.Mouse()
		m.last = fmt.Sprintf("wheel %d,%d", mo.Y, mo.X)
	}
	return m, nil
}

func inside(b probe.Bounds, row, col int) bool {
	return row >= b.Row && row < b.Row+b.Height && col >= b.Column && col < b.Column+b.Width
}

func (m *model) clickAt(row, col int) {
	m.focus = ""
	for id, b := range m.layout {
		if !inside(b, row, col) {
			continue
		}
		switch {
		case id == "ok":
			m.last += " ok"
		case id == "cancel":
			m.last += " cancel"
		case id == "agree":
			m.agree = !m.agree
		case id == "name":
			m.focus = "name"
		case strings.HasPrefix(id, "item-"):
			fmt.Sscanf(id, "item-%d", &m.selected)
		}
	}
}

// rows of the dialog, each with the node it declares.
func (m *model) blocks() ([]string, []*probe.Node) {
	box := "[ ]"
	if m.agree {
		box = "[x]"
	}
	cursor := " "
	if m.focus == "name" {
		cursor = "_"
	}
	lines := []string{"Settings", "", "Name: " + m.name + cursor, box + " I agree", ""}
	nodes := []*probe.Node{
		{ID: "title", Role: probe.RoleText, Name: "Settings"},
		nil,
		{ID: "name", Role: probe.RoleTextbox, Name: "Name", Label: "Name", Value: m.name, TestID: "name-field", State: &probe.State{Focused: m.focus == "name"}},
		{ID: "agree", Role: probe.RoleCheckbox, Name: "I agree", TestID: "agree-box", State: &probe.State{Checked: m.agree}},
		nil,
	}
	for i, it := range m.items {
		mark := "  "
		if i == m.selected {
			mark = "> "
		}
		lines = append(lines, mark+it)
		nodes = append(nodes, &probe.Node{ID: fmt.Sprintf("item-%d", i), Role: probe.RoleListitem, Name: it, State: &probe.State{Selected: i == m.selected}})
	}
	lines = append(lines, "", "[ OK ]  [ Cancel ]")
	nodes = append(nodes, nil, nil)
	return lines, nodes
}

func (m *model) View() tea.View {
	lines, _ := m.blocks()
	state := "probe off"
	if m.publishing {
		state = "probe on"
	}
	out := strings.Join(lines, "\n") + "\n\nlast: " + m.last + "\n" + state
	v := tea.NewView(out)
	v.AltScreen = true
	v.MouseMode = tea.MouseModeAllMotion
	return v
}

// tree is the tree of what View drew; it also keeps the layout for clicks.
func (m *model) tree() *probe.Node {
	lines, nodes := m.blocks()
	root := &probe.Node{ID: "dialog", Role: probe.RoleDialog, Name: "Settings", Bounds: probe.Bounds{Width: 30, Height: len(lines)}}
	list := &probe.Node{ID: "fruits", Role: probe.RoleList, Name: "Fruits"}
	col := probe.Column{}
	layout := map[string]probe.Bounds{}
	for i, l := range lines {
		row := col.Next(l)
		n := nodes[i]
		if n == nil {
			continue
		}
		probe.Place(n, row, 0, l)
		if n.ID == "name" {
			n.Bounds.Width = 20
		}
		layout[n.ID] = n.Bounds
		if n.Role == probe.RoleListitem {
			list.Add(n)
			continue
		}
		root.Add(n)
	}
	if len(list.Children) > 0 {
		first, last := list.Children[0].Bounds, list.Children[len(list.Children)-1].Bounds
		list.Bounds = probe.Bounds{Row: first.Row, Width: 12, Height: last.Row - first.Row + 1}
		root.Add(list)
	}
	btnRow := len(lines) - 1
	ok := &probe.Node{ID: "ok", Role: probe.RoleButton, Name: "OK", TestID: "ok-btn", Bounds: probe.Bounds{Row: btnRow, Column: 0, Width: 6, Height: 1}}
	cancel := &probe.Node{ID: "cancel", Role: probe.RoleButton, Name: "Cancel", Bounds: probe.Bounds{Row: btnRow, Column: 8, Width: 10, Height: 1}}
	layout["ok"], layout["cancel"] = ok.Bounds, cancel.Bounds
	root.Add(ok, cancel)
	m.layout = layout
	return probe.Clip(root, m.width, m.height)
}

func main() {
	noProbe := flag.Bool("noprobe", false, "publish no tree")
	wait := flag.Bool("wait", false, "publish once P is pressed")
	flag.Parse()
	m := &model{items: []string{"apple", "banana", "cherry", "banana split"}, publishing: !*wait}
	m.tree() // the layout before the first frame
	var prog tea.Model = m
	var pub *probe.Publisher
	if !*noProbe {
		pub = probe.New(probe.Options{OnError: func(err error) { fmt.Fprintln(os.Stderr, "probe:", err) }})
		defer pub.Close()
		prog = probe.Wrap(m, pub, func(tea.Model) *probe.Node {
			t := m.tree() // also the layout clicks are matched against
			if m.width == 0 || !m.publishing {
				return nil // no size yet (the bounds cannot be checked), or not yet asked to
			}
			return t
		})
	}
	if _, err := tea.NewProgram(prog).Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
