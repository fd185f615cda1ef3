package tools

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The semantic tree rows of the table (CONTRACT §22): semantic_publish,
// terminal_fill, terminal_check, terminal_uncheck, and the locator that
// terminal_query, the mouse operations and terminal_wait_for accept.

// SemanticRoles are the fixed roles of a semantic tree (checked against
// orchestrator/semantic.Roles by a test).
var SemanticRoles = []string{"window", "dialog", "button", "checkbox", "radio", "textbox", "list", "listitem",
	"menu", "menuitem", "tab", "tablist", "text", "progressbar", "table", "row", "cell", "group"}

// SemanticStates are the conditions of terminal_wait_for {wait: "semantic"}.
var SemanticStates = []string{"focused", "checked", "unchecked", "selected", "visible", "hidden", "enabled", "disabled"}

// WaitSemantic is the wait mode of a semantic condition (terminal_wait_for only).
const WaitSemantic = "semantic"

// MaxSemanticTreeBytes is the largest tree one commit may carry; the
// request around it must also fit in MaxBodyBytes.
const MaxSemanticTreeBytes = 1 << 20

var (
	locatorText = func(name, what string) Param {
		return Param{Name: name, Type: TypeString, NonEmpty: true, MaxLen: 4096, Description: what}
	}
	paramLocator = Param{Name: "locator", Type: TypeStruct,
		Description: "A node of the program's semantic tree (needs a probe: terminal_capabilities semantic_tree available): every field given must match; more than one match is kind conflict (ambiguous-locator) unless nth.",
		Fields: []Param{
			enumParam("role", "The node's role.", SemanticRoles...),
			locatorText("name", "The node's accessible name, exactly, or /pattern/flags (Go RE2; flags i, s, m)."),
			locatorText("test_id", "The node's test id, exactly."),
			locatorText("label", "The node's label, exactly."),
			locatorText("text", "A substring of the node's name, value or label, or /pattern/flags."),
			intParam("nth", "Take the nth match (1 is the first in reading order) instead of requiring exactly one.", intPtr(1), intPtr(4096)),
		}}
	paramSemState = enumParam("state", "For wait=semantic: the condition the located node must reach in a commit after the baseline (hidden: no node matches).", SemanticStates...)
)

func semanticOperations() []*Operation {
	target := []Param{paramTerminal, required(paramLocator)}
	return []*Operation{
		{Name: "semantic_publish", Result: SemanticPublished{}, Topic: TopicTerminal, Annotations: annWrite,
			Description: "For a node's own program (its probe; the node's session only, never the operator or another node): publish the program's UI as a semantic tree {id, role, name?, value?, test_id?, label?, bounds:{row,column,width,height}, state?:{focused,checked,selected,disabled,expanded}, children?}; at most 4,096 nodes and 1 MiB, bounds inside the screen. The commit is stamped with the screen revision.",
			Params: []Param{{Name: "tree", Type: TypeRawObject, Required: true,
				Description: "The root node of the tree (see the operation's description; roles: " + fmt.Sprint(SemanticRoles) + ")."}}},
		{Name: "terminal_fill", Result: SemanticActionResult{}, State: Snapshot{}, Topic: TopicTerminal, Mutation: true, Annotations: annInput,
			Description: "Fill a textbox of the semantic tree: focus it with a real click, clear it (End, then Ctrl+U), type text, and verify from a later commit that its value is text.",
			Params:      append(slices.Clone(target), required(strParam("text", "The new value.")))},
		{Name: "terminal_check", Result: SemanticActionResult{}, State: Snapshot{}, Topic: TopicTerminal, Mutation: true, Annotations: annInput,
			Description: "Check a checkbox or radio of the semantic tree with a real click (nothing sent when it is already checked) and verify it from a later commit.",
			Params:      slices.Clone(target)},
		{Name: "terminal_uncheck", Result: SemanticActionResult{}, State: Snapshot{}, Topic: TopicTerminal, Mutation: true, Annotations: annInput,
			Description: "Uncheck a checkbox of the semantic tree with a real click (nothing sent when it is already unchecked) and verify it from a later commit.",
			Params:      slices.Clone(target)},
	}
}

// addLocators lets terminal_query and the pointer operations take a
// locator in place of text/pattern or at/ref, and terminal_wait_for wait
// for a semantic condition.
func addLocators(ops []*Operation) {
	for _, op := range ops {
		switch op.Name {
		case "terminal_query", "terminal_click", "terminal_hover", "terminal_wheel":
			at := slices.IndexFunc(op.Params, func(p Param) bool { return p.Name == "wait" })
			if at < 0 {
				at = len(op.Params)
			}
			op.Params = slices.Insert(op.Params, at, paramLocator)
			inner, alt := op.check, []string{"at", "ref"}
			if op.Name == "terminal_query" {
				alt = []string{"text", "pattern"}
			}
			op.check = func(op *Operation, fields map[string]json.RawMessage) error {
				if _, ok := fields["locator"]; !ok {
					return inner(op, fields)
				}
				for _, a := range alt {
					if _, ok := fields[a]; ok {
						return op.usageErr(a, "give %q or %q or \"locator\", only one", alt[0], alt[1])
					}
				}
				return checkLocatorNotEmpty(op, fields)
			}
		case "terminal_wait_for":
			i := slices.IndexFunc(op.Params, func(p Param) bool { return p.Name == "wait" })
			mode := op.Params[i]
			mode.Enum = append(slices.Clone(mode.Enum), WaitSemantic)
			mode.Description += " semantic (the located node of the semantic tree reaches state in a commit after the baseline: without after, the latest commit at the call; with after, the commits seen by the first input sent at that revision, else every commit stamped at or before it; after: 0 is the node's start, so every commit counts)."
			op.Params[i] = mode
			op.Params = append(op.Params, paramLocator, paramSemState)
			inner := op.check
			op.check = func(op *Operation, fields map[string]json.RawMessage) error {
				var m string
				_ = json.Unmarshal(fields["wait"], &m)
				_, hasLoc := fields["locator"]
				_, hasState := fields["state"]
				if m != WaitSemantic {
					if hasLoc || hasState {
						return op.usageErr("locator", "arguments \"locator\" and \"state\" are only used with wait=semantic (wait is %q)", m)
					}
					return inner(op, fields)
				}
				if !hasLoc || !hasState {
					return op.usageErr("locator", "wait=semantic needs \"locator\" (the node) and \"state\" (%v)", SemanticStates)
				}
				if err := inner(op, fields); err != nil {
					return err
				}
				return checkLocatorNotEmpty(op, fields)
			}
		case "terminal_fill", "terminal_check", "terminal_uncheck":
			op.check = checkLocatorNotEmpty
		}
	}
}

func checkLocatorNotEmpty(op *Operation, fields map[string]json.RawMessage) error {
	var l map[string]json.RawMessage
	if json.Unmarshal(fields["locator"], &l) == nil {
		delete(l, "nth")
		if len(l) == 0 {
			return op.usageErr("locator", "the locator is empty: give role, name, test_id, label or text")
		}
	}
	return nil
}

// semanticTreeSchema is the JSON Schema of a tree's root node; children
// are nodes of the same shape (checked by the orchestrator).
func semanticTreeSchema() map[string]any {
	str := func(desc string) map[string]any {
		return map[string]any{"type": "string", "maxLength": 4096, "description": desc}
	}
	cell := func(desc string) map[string]any {
		return map[string]any{"type": "integer", "minimum": 0, "maximum": MaxColumns, "description": desc}
	}
	flag := map[string]any{"type": "boolean"}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"id":      str("Stable id, unique in the tree (no @, spaces or quotes)."),
			"role":    map[string]any{"type": "string", "enum": SemanticRoles},
			"name":    str("Accessible name."),
			"value":   str("Current value (a textbox's text)."),
			"test_id": str("Test id."),
			"label":   str("Label."),
			"bounds": map[string]any{"type": "object", "additionalProperties": false, "required": []string{"row", "column", "width", "height"},
				"properties": map[string]any{"row": cell("0-based row."), "column": cell("0-based column."), "width": cell("Cells wide."), "height": cell("Rows high.")}},
			"state": map[string]any{"type": "object", "additionalProperties": false, "required": []string{},
				"properties": map[string]any{"focused": flag, "checked": flag, "selected": flag, "disabled": flag, "expanded": flag}},
			"children": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/properties/tree"}, "description": "Child nodes of the same shape."},
		},
		"required":             []string{"id", "role", "bounds"},
		"additionalProperties": false,
	}
}
