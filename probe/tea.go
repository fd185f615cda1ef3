package probe

import (
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// Bubble Tea v2 helpers: a component renders its block, the program's
// View places the blocks, and each component's node gets the bounds of
// its block from where it was placed.

// Measure is the width (widest line, in cells) and height (lines) of a
// rendered block, escape sequences ignored.
func Measure(block string) (width, height int) {
	lines := strings.Split(block, "\n")
	for _, l := range lines {
		width = max(width, ansi.StringWidth(l))
	}
	return width, len(lines)
}

// Place sets n's bounds to block's size at (row, column) and returns n.
func Place(n *Node, row, column int, block string) *Node {
	w, h := Measure(block)
	n.Bounds = Bounds{Row: row, Column: column, Width: w, Height: h}
	return n
}

// Shift moves n and its subtree by rows and columns (a component that
// laid out its nodes from 0,0 and was then placed elsewhere).
func Shift(n *Node, rows, columns int) *Node {
	if n == nil {
		return nil
	}
	n.Bounds.Row += rows
	n.Bounds.Column += columns
	for _, c := range n.Children {
		Shift(c, rows, columns)
	}
	return n
}

// Clip cuts n's subtree to a screen of columns x rows: bounds are
// shortened to the screen and nodes wholly outside it are dropped (the
// orchestrator refuses bounds off the screen). Use it with the size of the
// last tea.WindowSizeMsg.
func Clip(n *Node, columns, rows int) *Node {
	if n == nil || columns <= 0 || rows <= 0 {
		return n
	}
	b := &n.Bounds
	b.Row, b.Column = min(max(b.Row, 0), rows-1), min(max(b.Column, 0), columns-1)
	b.Width = min(max(b.Width, 0), columns-b.Column)
	b.Height = min(max(b.Height, 0), rows-b.Row)
	kept := n.Children[:0]
	for _, c := range n.Children {
		if c.Bounds.Row < rows && c.Bounds.Column < columns {
			kept = append(kept, Clip(c, columns, rows))
		}
	}
	n.Children = kept
	return n
}

// Column stacks blocks top to bottom from a row, as lipgloss.JoinVertical
// does: Next returns the row a block starts at and moves past it.
type Column struct{ Row int }

// Next returns the block's first row and advances by its height.
func (c *Column) Next(block string) int {
	r := c.Row
	_, h := Measure(block)
	c.Row += h
	return r
}

// Model wraps a Bubble Tea v2 model so every frame's tree is published:
// after the inner View, Tree builds the tree of the model just rendered
// and the Publisher sends it (never blocking the program: Publish only
// queues the latest tree, and identical consecutive trees are sent once).
type Model struct {
	Inner tea.Model
	Pub   *Publisher
	// Tree builds the tree of m (the inner model) as View rendered it.
	Tree func(m tea.Model) *Node

	last string
}

// Wrap returns a Model publishing tree(m) after every View.
func Wrap(m tea.Model, pub *Publisher, tree func(m tea.Model) *Node) *Model {
	return &Model{Inner: m, Pub: pub, Tree: tree}
}

// Init is the inner model's.
func (w *Model) Init() tea.Cmd { return w.Inner.Init() }

// Update forwards to the inner model.
func (w *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := w.Inner.Update(msg)
	w.Inner = m
	return w, cmd
}

// View renders the inner model and publishes its tree.
func (w *Model) View() tea.View {
	v := w.Inner.View()
	if w.Pub.Enabled() && w.Tree != nil {
		if root := w.Tree(w.Inner); root != nil {
			w.publishChanged(root)
		}
	}
	return v
}

func (w *Model) publishChanged(root *Node) {
	key := treeKey(root)
	if key == w.last {
		return
	}
	w.last = key
	_ = w.Pub.Publish(root)
}
