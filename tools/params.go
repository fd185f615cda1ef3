package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Nested arguments: a strict object of named fields (TypeStruct, e.g. a
// cell {row, column}) and an array of them (TypeStructArray, e.g. the
// logs of terminal_launch). The fields are Params like the top level
// ones, validated by the same checkValue and described by the same
// schema code, so nested arguments are as strict as top-level ones.

// checkNested validates a TypeStruct or TypeStructArray value.
func (op *Operation) checkNested(p *Param, path string, t []byte) error {
	if p.Type == TypeStructArray {
		if t[0] != '[' {
			return op.usageErr(path, "argument %q must be an array of objects like %s, got %s", path, exampleOf(p.Fields), jsonKindOf(t))
		}
		var items []json.RawMessage
		if err := json.Unmarshal(t, &items); err != nil {
			return op.usageErr(path, "argument %q is not a valid JSON array: %w", path, err)
		}
		if p.NonEmpty && len(items) == 0 {
			return op.usageErr(path, "argument %q must not be an empty array; omit it instead", path)
		}
		if p.MaxItems > 0 && len(items) > p.MaxItems {
			return op.usageErr(path, "argument %q has %d elements, at most %d are allowed", path, len(items), p.MaxItems)
		}
		for i, it := range items {
			if err := op.checkStruct(p.Fields, fmt.Sprintf("%s[%d]", path, i), bytes.TrimSpace(it)); err != nil {
				return err
			}
		}
		return nil
	}
	return op.checkStruct(p.Fields, path, t)
}

// checkStruct validates one strict object against fields.
func (op *Operation) checkStruct(fields []Param, path string, t []byte) error {
	if len(t) == 0 || t[0] != '{' {
		return op.usageErr(path, "argument %q must be an object like %s, got %s", path, exampleOf(fields), jsonKindOf(t))
	}
	m, err := decodeObject(t)
	if err != nil {
		return op.usageErr(path, "argument %q is not a valid JSON object: %w", path, err)
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	for _, k := range sortedKeys(m) {
		known := false
		for _, f := range fields {
			known = known || f.Name == k
		}
		if !known {
			return op.usageErr(path+"."+clip(k, 64), "unknown argument %q; allowed in %q: %s", path+"."+clip(k, 64), path, strings.Join(names, ", "))
		}
	}
	for i := range fields {
		f := &fields[i]
		raw, ok := m[f.Name]
		if !ok {
			if f.Required {
				return op.usageErr(path+"."+f.Name, "missing required argument %q (%s)", path+"."+f.Name, f.Description)
			}
			continue
		}
		if err := op.checkValue(f, path+"."+f.Name, raw); err != nil {
			return err
		}
	}
	return nil
}

// exampleOf shows the shape of an object with fields, e.g. {"row":…,"column":…}.
func exampleOf(fields []Param) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = fmt.Sprintf("%q:…", f.Name)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func nestedTypeText(p *Param) string {
	if p.Type == TypeStructArray {
		return "an array of objects " + exampleOf(p.Fields)
	}
	return "an object " + exampleOf(p.Fields)
}

func nestedSchema(p Param) map[string]any {
	obj := objectSchema(p.Fields)
	if p.Type != TypeStructArray {
		return obj
	}
	s := map[string]any{"type": "array", "items": obj}
	if p.NonEmpty {
		s["minItems"] = 1
	}
	if p.MaxItems > 0 {
		s["maxItems"] = p.MaxItems
	}
	return s
}
