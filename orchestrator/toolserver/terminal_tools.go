package toolserver

import (
	"encoding/base64"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// Handlers of termwright's terminal tools (CONTRACT §11).
func terminalToolHandlers() map[string]handler {
	return map[string]handler{
		"terminal_capabilities": reader(terminalCapabilities),
		"terminal_query":        reader(terminalQuery),
		"terminal_click":        mutator(mouseOp("click")),
		"terminal_hover":        mutator(mouseOp("hover")),
		"terminal_wheel":        mutator(mouseOp("wheel")),
		"terminal_drag":         mutator(mouseOp("drag")),
		"terminal_write_raw":    mutator(terminalWriteRaw),
	}
}

func terminalCapabilities(c *call, a terminalArg) (tools.Capabilities, error) {
	return c.s.eng.terminals.Capabilities(c.ctx, a.Terminal)
}

type queryArgs struct {
	terminalArg
	orchestrator.QuerySpec
}

func terminalQuery(c *call, a queryArgs) (tools.QueryResult, error) {
	return c.s.eng.terminals.Query(c.ctx, a.Terminal, a.QuerySpec)
}

// mouseArgs are the arguments of the four mouse operations.
type mouseArgs struct {
	terminalArg
	At        *tools.Cell     `json:"at"`
	From      *tools.Cell     `json:"from"`
	To        *tools.Cell     `json:"to"`
	Ref       string          `json:"ref"`
	Button    string          `json:"button"`
	Count     int             `json:"count"`
	Modifiers []string        `json:"modifiers"`
	DeltaY    int             `json:"delta_y"`
	Wait      *tools.WaitSpec `json:"wait"`
	// Locator: a node of the semantic tree in place of at/ref (semantic.go).
	Locator *tools.SemanticLocator `json:"locator"`
}

func mouseOp(kind string) func(c *call, a mouseArgs) (tools.MouseResult, any, error) {
	return func(c *call, a mouseArgs) (tools.MouseResult, any, error) {
		spec := orchestrator.MouseSpec{Kind: kind, At: a.At, To: a.To, Ref: a.Ref, Button: a.Button, Count: a.Count, Modifiers: a.Modifiers, DeltaY: a.DeltaY, Locator: a.Locator}
		if kind == "drag" {
			spec.At = a.From
		}
		r, err := c.s.eng.terminals.Mouse(c.ctx, a.Terminal, spec, a.Wait)
		if err != nil {
			return r, nil, err
		}
		return r, c.stateOf(a.Terminal), nil
	}
}

type rawArgs struct {
	terminalArg
	Text   string          `json:"text"`
	Base64 string          `json:"base64"`
	Wait   *tools.WaitSpec `json:"wait"`
}

func terminalWriteRaw(c *call, a rawArgs) (tools.InputResult, any, error) {
	data := []byte(a.Text)
	if a.Base64 != "" {
		var err error
		if data, err = base64.StdEncoding.DecodeString(a.Base64); err != nil {
			return tools.InputResult{}, nil, tools.Errorf(tools.KindUsage, "terminal_write_raw: argument \"base64\" does not decode: %w", err)
		}
	}
	r, err := c.s.eng.terminals.WriteRaw(c.ctx, a.Terminal, data, a.Wait)
	if err != nil {
		return r, nil, err
	}
	return r, c.stateOf(a.Terminal), nil
}
