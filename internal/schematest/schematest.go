// Package schematest checks JSON values against the operation table's
// output schemas in tests, with a real JSON Schema validator.
package schematest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/termsprawl/termsprawl/tools"
)

var (
	mu       sync.Mutex // guards compiled
	compiled = map[string]*jsonschema.Schema{}
)

func schemaFor(op *tools.Operation) (*jsonschema.Schema, error) {
	mu.Lock()
	defer mu.Unlock()
	if s, ok := compiled[op.Name]; ok {
		return s, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(op.OutputSchemaJSON()))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	url := "mem://" + op.Name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("compile the output schema of %s: %w", op.Name, err)
	}
	compiled[op.Name] = s
	return s, nil
}

// ValidateValue checks an operation's successful value against its output
// schema.
func ValidateValue(opName string, value json.RawMessage) error {
	op, ok := tools.Lookup(opName)
	if !ok {
		return fmt.Errorf("no operation %q", opName)
	}
	s, err := schemaFor(op)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return fmt.Errorf("%s: value is not JSON: %w", opName, err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%s: value %s does not match its output schema: %w", opName, clip(value), err)
	}
	return nil
}

func clip(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}
