package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// CanonicalArgs rewrites validated args so that Go's decoder takes them as
// JSON Schema means them: an integer argument written as 1.0 or 1e0 (which
// Validate accepts, CONTRACT §10) becomes 1, in the top-level arguments
// and in a nested wait object. Anything else is returned unchanged, byte
// for byte, so args that need no rewrite keep their idempotency identity.
// args must have passed op.Validate.
func (op *Operation) CanonicalArgs(args json.RawMessage) json.RawMessage {
	args = NormalizeArgs(args)
	fields, err := decodeObject(args)
	if err != nil {
		return args
	}
	changed := false
	for i := range op.Params {
		p := &op.Params[i]
		raw, ok := fields[p.Name]
		if !ok {
			continue
		}
		switch p.Type {
		case TypeInteger:
			if c, ok := canonicalInteger(raw); ok {
				fields[p.Name], changed = c, true
			}
		case TypeWaitObject:
			inner, err := decodeObject(raw)
			if err != nil {
				continue
			}
			innerChanged := false
			for _, wp := range waitObjectParams {
				if r, ok := inner[wp.Name]; ok && wp.Type == TypeInteger {
					if c, ok := canonicalInteger(r); ok {
						inner[wp.Name], innerChanged = c, true
					}
				}
			}
			if innerChanged {
				if enc, err := json.Marshal(inner); err == nil {
					fields[p.Name], changed = enc, true
				}
			}
		}
	}
	if !changed {
		return args
	}
	enc, err := json.Marshal(fields)
	if err != nil {
		return args
	}
	return enc
}

// canonicalInteger returns the plain form of an integral number written
// with a fraction or an exponent, and false when raw is already plain (or
// not an integer at all).
func canonicalInteger(raw json.RawMessage) (json.RawMessage, bool) {
	t := bytes.TrimSpace(raw)
	if !bytes.ContainsAny(t, ".eE") {
		return nil, false
	}
	n, ok := parseInteger(t)
	if !ok {
		return nil, false
	}
	return json.RawMessage(strconv.FormatInt(n, 10)), true
}

// CanonicalJSON is one JSON value in a canonical form: object keys
// sorted, no insignificant whitespace, strings escaped one way (no HTML
// escaping), numbers as written. Two inputs that mean the same value to
// a JSON reader that keeps the last of duplicate keys get the same bytes;
// inputs that differ in any string, even in whitespace, do not. It is
// what "always" answers remember a tool's input by.
func CanonicalJSON(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return "", errors.New("more than one JSON value")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("encode: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
