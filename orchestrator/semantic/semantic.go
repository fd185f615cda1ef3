// Package semantic is the room of semantic trees (CONTRACT §22): the tree
// a program's probe publishes with semantic_publish, its validation, the
// compact lines terminal_snapshot shows, locators and the tree diff of
// terminal_capture_since. It is pure: no I/O, no locks, no goroutines;
// the engine keeps the commits and calls it.
package semantic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/termsprawl/termsprawl/tools"
)

// Limits of one commit.
const (
	// MaxNodes is the most nodes one tree may have.
	MaxNodes = 4096
	// MaxBytes is the largest tree, as JSON.
	MaxBytes = 1 << 20
	// MaxDepth bounds the nesting of children.
	MaxDepth = 64
	// MaxTextBytes caps id, name, value, test_id and label.
	MaxTextBytes = 4096
)

// Roles are the fixed list of roles; there are no invented ones.
var Roles = []string{"window", "dialog", "button", "checkbox", "radio", "textbox", "list", "listitem",
	"menu", "menuitem", "tab", "tablist", "text", "progressbar", "table", "row", "cell", "group"}

// Bounds are a node's cells on the screen, 0-based; State are its flags;
// Node is one node of a tree as the probe sends it (the wire types live in
// tools, so that the probe and this room share one definition).
type (
	Bounds = tools.SemanticBounds
	State  = tools.SemanticState
	Node   = tools.SemanticNode
)

// Flat is a node without its children, with its parent's id and its
// place in reading order (depth first).
type Flat struct {
	Node
	Parent string
	Depth  int
}

// Error is a refused tree: Reason is a short word for details.reason.
type Error struct {
	Reason string
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

func refuse(reason, format string, a ...any) error {
	return &Error{Reason: reason, Msg: fmt.Sprintf(format, a...)}
}

// Decode parses and validates a tree published for a screen of columns x
// rows: at most MaxBytes of strict JSON (unknown fields refused), at most
// MaxNodes nodes, roles from Roles, unique non-empty ids, valid UTF-8,
// every node's bounds inside the screen.
func Decode(raw []byte, columns, rows int) (*Node, error) {
	if len(raw) > MaxBytes {
		return nil, refuse("too-large", "the tree is %d bytes, over the limit of %d (1 MiB); publish fewer nodes or shorter text", len(raw), MaxBytes)
	}
	if !utf8.Valid(raw) {
		return nil, refuse("invalid-utf8", "the tree is not valid UTF-8; every name, value and label must be UTF-8 text")
	}
	// Count before decoding so 5,000 nodes cost a scan, not a tree.
	if n := bytes.Count(raw, []byte(`"role"`)); n > MaxNodes {
		return nil, refuse("too-many-nodes", "the tree has about %d nodes, over the limit of %d; publish only what is on the screen", n, MaxNodes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var root Node
	if err := dec.Decode(&root); err != nil {
		return nil, refuse("invalid-tree", "the tree does not decode as a node {id, role, name?, value?, test_id?, label?, bounds, state?, children?}: %v", err)
	}
	if dec.More() {
		return nil, refuse("invalid-tree", "the tree has data after its root object")
	}
	if err := Validate(&root, columns, rows); err != nil {
		return nil, err
	}
	return &root, nil
}

// Validate checks a decoded tree (see Decode).
func Validate(root *Node, columns, rows int) error {
	seen := map[string]bool{}
	count := 0
	var walk func(n *Node, path string, depth int) error
	walk = func(n *Node, path string, depth int) error {
		if n == nil {
			return refuse("invalid-tree", "%s is null; every node is an object", path)
		}
		count++
		if count > MaxNodes {
			return refuse("too-many-nodes", "the tree has more than %d nodes; publish only what is on the screen", MaxNodes)
		}
		if depth > MaxDepth {
			return refuse("invalid-tree", "%s is nested deeper than %d levels", path, MaxDepth)
		}
		if n.ID == "" {
			return refuse("invalid-tree", "%s has no id; give every node a stable id", path)
		}
		for _, f := range []struct{ name, v string }{{"id", n.ID}, {"name", n.Name}, {"value", n.Value}, {"test_id", n.TestID}, {"label", n.Label}} {
			if !utf8.ValidString(f.v) {
				return refuse("invalid-utf8", "%s: %s is not valid UTF-8", path, f.name)
			}
			if len(f.v) > MaxTextBytes {
				return refuse("too-large", "%s: %s is %d bytes, over the limit of %d", path, f.name, len(f.v), MaxTextBytes)
			}
		}
		if strings.ContainsAny(n.ID, "@ \t\n\"") {
			return refuse("invalid-tree", "%s: id %q may not contain @, spaces or quotes (it is part of a ref)", path, n.ID)
		}
		if seen[n.ID] {
			return refuse("invalid-tree", "%s: id %q is used twice; ids are unique in a tree", path, n.ID)
		}
		seen[n.ID] = true
		if !slices.Contains(Roles, n.Role) {
			return refuse("unknown-role", "%s (id %q): unknown role %q; roles are %s", path, n.ID, clip(n.Role, 40), strings.Join(Roles, " "))
		}
		b := n.Bounds
		if b.Row < 0 || b.Column < 0 || b.Width < 0 || b.Height < 0 || b.Row+b.Height > rows || b.Column+b.Width > columns {
			return refuse("bounds-off-screen", "%s (id %q): bounds (row %d, column %d, width %d, height %d) are not inside the %dx%d screen (rows 0..%d, columns 0..%d)",
				path, n.ID, b.Row, b.Column, b.Width, b.Height, columns, rows, rows-1, columns-1)
		}
		for i, c := range n.Children {
			if err := walk(c, fmt.Sprintf("%s.children[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root, "tree", 0)
}

// Flatten lists the tree's nodes in reading order (depth first).
func Flatten(root *Node) []Flat {
	var out []Flat
	var walk func(n *Node, parent string, depth int)
	walk = func(n *Node, parent string, depth int) {
		f := Flat{Node: *n, Parent: parent, Depth: depth}
		f.Children = nil
		out = append(out, f)
		for _, c := range n.Children {
			walk(c, n.ID, depth+1)
		}
	}
	if root != nil {
		walk(root, "", 0)
	}
	return out
}

// RefOf is the ref of node id in the commit stamped rev.
func RefOf(id string, rev uint64) string {
	return "semantic:" + id + "@" + strconv.FormatUint(rev, 10)
}

// ParseRef splits semantic:ID@REV; ok is false when s is not a semantic ref.
func ParseRef(s string) (id string, rev uint64, ok bool, err error) {
	body, isSem := strings.CutPrefix(s, "semantic:")
	if !isSem {
		return "", 0, false, nil
	}
	i := strings.LastIndexByte(body, '@')
	if i <= 0 {
		return "", 0, true, fmt.Errorf("ref %q is not semantic:ID@REVISION", clip(s, 80))
	}
	rev, err = strconv.ParseUint(body[i+1:], 10, 64)
	if err != nil {
		return "", 0, true, fmt.Errorf("ref %q is not semantic:ID@REVISION (revision is not a number)", clip(s, 80))
	}
	return body[:i], rev, true, nil
}

// Line is a node's compact line: role "name" ref=… bounds=(row,col,w,h)
// and its set flags, indented by depth.
func Line(f Flat, rev uint64) string {
	var b strings.Builder
	b.WriteString(strings.Repeat("  ", f.Depth))
	b.WriteString(f.Role)
	if f.Name != "" {
		b.WriteString(" " + strconv.Quote(f.Name))
	}
	if f.Value != "" {
		b.WriteString(" value=" + strconv.Quote(f.Value))
	}
	if f.TestID != "" {
		b.WriteString(" test_id=" + strconv.Quote(f.TestID))
	}
	if f.Label != "" && f.Label != f.Name {
		b.WriteString(" label=" + strconv.Quote(f.Label))
	}
	fmt.Fprintf(&b, " ref=%s bounds=(%d,%d,%d,%d)", RefOf(f.ID, rev), f.Bounds.Row, f.Bounds.Column, f.Bounds.Width, f.Bounds.Height)
	if s := f.State; s != nil {
		for _, x := range []struct {
			on   bool
			name string
		}{{s.Focused, "focused"}, {s.Checked, "checked"}, {s.Selected, "selected"}, {s.Disabled, "disabled"}, {s.Expanded, "expanded"}} {
			if x.on {
				b.WriteString(" " + x.name)
			}
		}
	}
	return b.String()
}

// Lines are the compact lines of a tree stamped rev.
func Lines(root *Node, rev uint64) []string {
	flat := Flatten(root)
	out := make([]string, len(flat))
	for i, f := range flat {
		out[i] = Line(f, rev)
	}
	return out
}

// Changes are the nodes added, removed or changed between two trees, as
// compact lines of the newer commit (removed: of the older one). A node
// counts as changed when anything but its children differs; its subtree
// follows it in Changed only when the child nodes changed themselves.
type Changes struct {
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	Changed []string `json:"changed"`
}

// Diff compares the tree of the commit stamped oldRev with the one
// stamped newRev (either may be nil).
func Diff(old *Node, oldRev uint64, cur *Node, newRev uint64) Changes {
	ch := Changes{Added: []string{}, Removed: []string{}, Changed: []string{}}
	before := map[string]Flat{}
	for _, f := range Flatten(old) {
		before[f.ID] = f
	}
	now := map[string]bool{}
	for _, f := range Flatten(cur) {
		now[f.ID] = true
		o, ok := before[f.ID]
		switch {
		case !ok:
			ch.Added = append(ch.Added, Line(f, newRev))
		case !sameFlat(o, f):
			ch.Changed = append(ch.Changed, Line(f, newRev))
		}
	}
	for _, f := range Flatten(old) {
		if !now[f.ID] {
			ch.Removed = append(ch.Removed, Line(f, oldRev))
		}
	}
	return ch
}

func sameFlat(a, b Flat) bool {
	sa, sb := State{}, State{}
	if a.State != nil {
		sa = *a.State
	}
	if b.State != nil {
		sb = *b.State
	}
	return a.Role == b.Role && a.Name == b.Name && a.Value == b.Value && a.TestID == b.TestID && a.Label == b.Label &&
		a.Bounds == b.Bounds && sa == sb && a.Parent == b.Parent
}

// Locator picks nodes: every given field must match. Name and Text are
// exact (Name) or a substring of name, value or label (Text), or a
// /pattern/flags regex (flags: i, s, m); Nth (1-based) picks one match.
type Locator struct {
	Role   string `json:"role,omitempty"`
	Name   string `json:"name,omitempty"`
	TestID string `json:"test_id,omitempty"`
	Label  string `json:"label,omitempty"`
	Text   string `json:"text,omitempty"`
	Nth    int    `json:"nth,omitempty"`
}

// Empty reports whether no field is set.
func (l Locator) Empty() bool {
	return l.Role == "" && l.Name == "" && l.TestID == "" && l.Label == "" && l.Text == ""
}

// String is a short description for messages.
func (l Locator) String() string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+strconv.Quote(v))
		}
	}
	add("role", l.Role)
	add("name", l.Name)
	add("test_id", l.TestID)
	add("label", l.Label)
	add("text", l.Text)
	if l.Nth > 0 {
		parts = append(parts, "nth="+strconv.Itoa(l.Nth))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// ErrAmbiguous: a locator without nth matched more than one node.
var ErrAmbiguous = errors.New("ambiguous-locator")

// matcher matches one string field.
type matcher func(string) bool

// compileText turns name or text into a matcher: /re/flags is a regex,
// else exact (or, for text, substring).
func compileText(arg, s string, substring bool) (matcher, error) {
	if len(s) >= 2 && s[0] == '/' {
		end := strings.LastIndexByte(s, '/')
		if end > 0 {
			pat, flags := s[1:end], s[end+1:]
			for _, f := range flags {
				if !strings.ContainsRune("ism", f) {
					return nil, fmt.Errorf("locator %s %q: unknown regex flag %q (use i, s or m)", arg, clip(s, 60), f)
				}
			}
			if flags != "" {
				pat = "(?" + flags + ")" + pat
			}
			re, err := regexp.Compile(pat)
			if err != nil {
				return nil, fmt.Errorf("locator %s %q is not a valid Go RE2 /pattern/flags: %w", arg, clip(s, 60), err)
			}
			return re.MatchString, nil
		}
	}
	if substring {
		return func(v string) bool { return strings.Contains(v, s) }, nil
	}
	return func(v string) bool { return v == s }, nil
}

// Compile checks a locator: a role from Roles, valid regexes.
func (l Locator) Compile() (func(Flat) bool, error) {
	if l.Empty() {
		return nil, errors.New("the locator is empty: give role, name, test_id, label or text")
	}
	if l.Role != "" && !slices.Contains(Roles, l.Role) {
		return nil, fmt.Errorf("locator role %q is not a role; roles are %s", clip(l.Role, 40), strings.Join(Roles, " "))
	}
	var name, text matcher
	var err error
	if l.Name != "" {
		if name, err = compileText("name", l.Name, false); err != nil {
			return nil, err
		}
	}
	if l.Text != "" {
		if text, err = compileText("text", l.Text, true); err != nil {
			return nil, err
		}
	}
	return func(f Flat) bool {
		return (l.Role == "" || f.Role == l.Role) &&
			(name == nil || name(f.Name)) &&
			(l.TestID == "" || f.TestID == l.TestID) &&
			(l.Label == "" || f.Label == l.Label) &&
			(text == nil || text(f.Name) || text(f.Value) || text(f.Label))
	}, nil
}

// Find lists the nodes of root the locator matches, in reading order; with
// Nth only that one (none when there are fewer).
func Find(root *Node, l Locator) ([]Flat, error) {
	match, err := l.Compile()
	if err != nil {
		return nil, err
	}
	out := []Flat{}
	for _, f := range Flatten(root) {
		if match(f) {
			out = append(out, f)
		}
	}
	if l.Nth > 0 {
		if l.Nth > len(out) {
			return []Flat{}, nil
		}
		return out[l.Nth-1 : l.Nth], nil
	}
	return out, nil
}

// One is the single node a locator names: none is an empty result, more
// than one without Nth is ErrAmbiguous (with the matches).
func One(root *Node, l Locator) (Flat, []Flat, error) {
	ms, err := Find(root, l)
	if err != nil {
		return Flat{}, nil, err
	}
	switch {
	case len(ms) == 0:
		return Flat{}, ms, nil
	case len(ms) > 1:
		return Flat{}, ms, ErrAmbiguous
	}
	return ms[0], ms, nil
}

// Lookup finds the node with id.
func Lookup(root *Node, id string) (Flat, bool) {
	for _, f := range Flatten(root) {
		if f.ID == id {
			return f, true
		}
	}
	return Flat{}, false
}

// States are the conditions of a semantic wait.
var States = []string{"focused", "checked", "unchecked", "selected", "visible", "hidden", "enabled", "disabled"}

// Holds reports whether state holds for the nodes a locator found (ms):
// hidden when none matched, visible when one did, else the flag of the
// first match.
func Holds(state string, ms []Flat) bool {
	if state == "hidden" {
		return len(ms) == 0
	}
	if len(ms) == 0 {
		return false
	}
	s := State{}
	if ms[0].State != nil {
		s = *ms[0].State
	}
	switch state {
	case "visible":
		return true
	case "focused":
		return s.Focused
	case "checked":
		return s.Checked
	case "unchecked":
		return !s.Checked
	case "selected":
		return s.Selected
	case "enabled":
		return !s.Disabled
	case "disabled":
		return s.Disabled
	}
	return false
}

// Center is the cell a pointer action aims at: the middle of the first
// row of the bounds (a node of width 0 at its column).
func Center(b Bounds) (row, column int) {
	return b.Row + max(b.Height-1, 0)/2, b.Column + max(b.Width-1, 0)/2
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
