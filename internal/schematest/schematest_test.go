package schematest

import (
	"encoding/json"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// Every output schema compiles, accepts the zero value of its type, and
// refuses a value with a key the type does not have.
func TestOutputSchemas(t *testing.T) {
	t.Parallel()
	for _, op := range tools.Operations() {
		var v any = op.Result
		if op.Mutation {
			v = tools.Receipt{Action: op.Name, Result: op.Result, State: op.State}
		}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateValue(op.Name, raw); err != nil {
			t.Errorf("zero value: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		m["no_such_key"] = 1
		bad, _ := json.Marshal(m)
		if err := ValidateValue(op.Name, bad); err == nil {
			t.Errorf("%s: a value with an unknown key passed its schema", op.Name)
		}
	}
	// A receipt whose state was truncated, and one for a closed terminal.
	raw, _ := json.Marshal(tools.Receipt{Action: "terminal_type", Result: tools.InputResult{}, State: tools.TruncatedState{Truncated: true, Hint: "x"}})
	if err := ValidateValue("terminal_type", raw); err != nil {
		t.Error(err)
	}
	raw, _ = json.Marshal(tools.Receipt{Action: "terminal_type", Result: tools.InputResult{}, State: tools.ClosedState{Terminal: "a", Status: "closed"}})
	if err := ValidateValue("terminal_type", raw); err != nil {
		t.Error(err)
	}
}
