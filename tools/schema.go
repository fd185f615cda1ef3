package tools

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Output schemas are generated from the value types of values.go by
// reflection, so the schema MCP hosts see (outputSchema) and the JSON the
// server sends cannot drift: both come from one Go type.

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage(nil))
)

// SchemaOf returns the JSON Schema of the JSON encoding of values of v's
// type. Structs are strict objects (additionalProperties false); fields
// without omitempty/omitzero are required; nil-able fields that are
// always present (slices, maps, pointers) also allow null.
func SchemaOf(v any) map[string]any {
	return schemaOfType(reflect.TypeOf(v))
}

func schemaOfType(t reflect.Type) map[string]any {
	if t == nil {
		return map[string]any{}
	}
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOfType(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": schemaOfType(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOfType(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		props := map[string]any{}
		required := []string{}
		addStructFields(t, props, &required)
		return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
	}
	panic(fmt.Sprintf("tools: no schema for type %s", t))
}

// addStructFields adds t's JSON fields (embedded structs flattened, as
// encoding/json does) to props.
func addStructFields(t reflect.Type, props map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addStructFields(ft, props, required)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		s := schemaOfType(f.Type)
		optional := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		if !optional {
			*required = append(*required, name)
			switch f.Type.Kind() {
			case reflect.Slice, reflect.Map, reflect.Pointer:
				if typ, ok := s["type"].(string); ok && f.Type != rawType {
					s["type"] = []string{typ, "null"}
				}
			}
		}
		props[name] = s
	}
}

// OutputSchema is the JSON Schema of the operation's value: the Result
// type for reads; for mutations the receipt with that result and the
// operation's state type.
func (op *Operation) OutputSchema() map[string]any {
	if !op.Mutation {
		return SchemaOf(op.Result)
	}
	// The state of a receipt over MaxReceiptBytes is replaced by a marker;
	// a terminal's state is ClosedState once the terminal is gone.
	states := []any{SchemaOf(op.State), SchemaOf(TruncatedState{})}
	if _, ok := op.State.(Snapshot); ok {
		states = append(states, SchemaOf(ClosedState{}))
	}
	state := map[string]any{"anyOf": states}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"action":          map[string]any{"type": "string", "const": op.Name},
			"result":          SchemaOf(op.Result),
			"idempotency_key": map[string]any{"type": "string"},
			"state":           state,
		},
		"required":             []string{"action", "result", "state"},
		"additionalProperties": false,
	}
}

// OutputSchemaJSON is OutputSchema marshalled.
func (op *Operation) OutputSchemaJSON() json.RawMessage {
	raw, err := json.Marshal(op.OutputSchema())
	if err != nil {
		panic(fmt.Sprintf("tools: marshal output schema of %s: %v", op.Name, err))
	}
	return raw
}
