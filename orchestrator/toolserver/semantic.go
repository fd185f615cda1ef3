package toolserver

import (
	"encoding/json"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// Handlers of the semantic tree operations (CONTRACT §22). The locator
// of terminal_query and the mouse operations rides on their own args
// (queryArgs, mouseArgs); wait=semantic on terminal_wait_for's.

func semanticHandlers() map[string]handler {
	return map[string]handler{
		"semantic_publish": reader(semanticPublish),
		"terminal_fill":    mutator(semanticAction("fill")),
		"terminal_check":   mutator(semanticAction("check")),
		"terminal_uncheck": mutator(semanticAction("uncheck")),
	}
}

type publishArgs struct {
	Tree json.RawMessage `json:"tree"`
}

// semanticPublish commits a tree for the caller's own node: a tree comes
// only from the node's own program, so the operator (who has no node) is
// refused and any other node's token publishes for that node alone.
func semanticPublish(c *call, a publishArgs) (tools.SemanticPublished, error) {
	if c.caller.Role == tools.RoleOperator || c.caller.Node == tools.OperatorNode {
		return tools.SemanticPublished{}, tools.Errorf(tools.KindForbidden, "semantic_publish is for a node's own program (its probe, with the node's TERMSPRAWL_SESSION_FILE); the operator has no tree to publish").
			WithDetails("reason", "not-a-node")
	}
	m, ok := c.s.eng.semantic.Meta(c.caller.Node)
	if !ok || m.Incarnation() != c.caller.Incarnation {
		return tools.SemanticPublished{}, tools.Errorf(tools.KindNotFound, "node %q of this session no longer runs; nothing was committed", c.caller.Node)
	}
	return c.s.eng.semantic.PublishSemantic(c.caller.Node, a.Tree)
}

type semanticActionArgs struct {
	terminalArg
	Locator tools.SemanticLocator `json:"locator"`
	Text    string                `json:"text"`
}

func semanticAction(kind string) func(c *call, a semanticActionArgs) (tools.SemanticActionResult, any, error) {
	return func(c *call, a semanticActionArgs) (tools.SemanticActionResult, any, error) {
		r, err := c.s.eng.semantic.ActSemantic(c.ctx, a.Terminal, orchestrator.SemanticAction{Kind: kind, Locator: a.Locator, Text: a.Text})
		if err != nil {
			return r, nil, err
		}
		return r, c.stateOf(a.Terminal), nil
	}
}
