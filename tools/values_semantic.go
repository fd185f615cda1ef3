package tools

// Values of the semantic tree operations (CONTRACT §22).

// SemanticPublished is semantic_publish's value: the commit as stamped.
type SemanticPublished struct {
	Terminal string `json:"terminal"`
	// Revision is the screen revision the commit is stamped with (refs
	// are semantic:ID@REVISION).
	Revision uint64 `json:"revision"`
	// Commit counts the node's commits (1 is the first).
	Commit uint64 `json:"commit"`
	Nodes  int    `json:"nodes"`
}

// SemanticBounds are a node's cells, 0-based.
type SemanticBounds struct {
	Row    int `json:"row"`
	Column int `json:"column"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// SemanticState are a node's flags.
type SemanticState struct {
	Focused  bool `json:"focused,omitempty"`
	Checked  bool `json:"checked,omitempty"`
	Selected bool `json:"selected,omitempty"`
	Disabled bool `json:"disabled,omitempty"`
	Expanded bool `json:"expanded,omitempty"`
}

// SemanticNode is one node of a published tree, as a probe sends it
// (CONTRACT §22); orchestrator/semantic validates it, package probe builds
// it.
type SemanticNode struct {
	ID       string          `json:"id"`
	Role     string          `json:"role"`
	Name     string          `json:"name,omitempty"`
	Value    string          `json:"value,omitempty"`
	TestID   string          `json:"test_id,omitempty"`
	Label    string          `json:"label,omitempty"`
	Bounds   SemanticBounds  `json:"bounds"`
	State    *SemanticState  `json:"state,omitempty"`
	Children []*SemanticNode `json:"children,omitempty"`
}

// Add appends children and returns n.
func (n *SemanticNode) Add(children ...*SemanticNode) *SemanticNode {
	n.Children = append(n.Children, children...)
	return n
}

// Find returns the node with id in n's subtree, or nil.
func (n *SemanticNode) Find(id string) *SemanticNode {
	if n == nil {
		return nil
	}
	if n.ID == id {
		return n
	}
	for _, c := range n.Children {
		if f := c.Find(id); f != nil {
			return f
		}
	}
	return nil
}

// SemanticLocator is the locator argument.
type SemanticLocator struct {
	Role   string `json:"role,omitempty"`
	Name   string `json:"name,omitempty"`
	TestID string `json:"test_id,omitempty"`
	Label  string `json:"label,omitempty"`
	Text   string `json:"text,omitempty"`
	Nth    int    `json:"nth,omitempty"`
}

// SemanticMatch is one node a locator found (terminal_query).
type SemanticMatch struct {
	Ref    string         `json:"ref"`
	Role   string         `json:"role"`
	Name   string         `json:"name,omitempty"`
	Value  string         `json:"value,omitempty"`
	TestID string         `json:"test_id,omitempty"`
	Label  string         `json:"label,omitempty"`
	Bounds SemanticBounds `json:"bounds"`
	State  SemanticState  `json:"state"`
	// Line is the node's compact line, as in terminal_snapshot's semantic.
	Line string `json:"line"`
}

// SemanticChanges are the nodes added, removed or changed since a
// cursor (terminal_capture_since), as compact lines.
type SemanticChanges struct {
	// Revision is the latest commit's; Since the commit at the cursor (0:
	// none).
	Revision uint64   `json:"revision"`
	Since    uint64   `json:"since"`
	Added    []string `json:"added"`
	Removed  []string `json:"removed"`
	Changed  []string `json:"changed"`
}

// SemanticActionResult is the value of terminal_fill, terminal_check and
// terminal_uncheck: what was done and the commit that verified it.
type SemanticActionResult struct {
	Terminal string `json:"terminal"`
	// Revision is the screen revision just before the first input.
	Revision uint64 `json:"revision"`
	// Ref is the node acted on, Verified the ref in the commit that
	// showed the outcome.
	Ref      string `json:"ref"`
	Verified string `json:"verified"`
	// Sent is false when the node already was as asked (nothing sent).
	Sent    bool   `json:"sent"`
	Value   string `json:"value,omitempty"`
	Checked *bool  `json:"checked,omitempty"`
}
