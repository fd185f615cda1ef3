package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxJSONDepth is encoding/json's nesting limit: deeper input is invalid
// JSON to it, so it is to CheckStrictJSON too.
const maxJSONDepth = 10000

// DuplicateKeyError is CheckStrictJSON's refusal of an object that names
// a key twice.
type DuplicateKeyError struct {
	// Key is the repeated key (decoded: "a" and "\u0061" are the same key).
	Key string
	// Path locates the object: "" for the top-level value, else a path
	// such as `wait`, `keys[2]` or `env["A B"]`.
	Path string
}

// Error reads well after a prefix such as "<operation>: ".
func (e *DuplicateKeyError) Error() string {
	where := ""
	if e.Path != "" {
		where = " in " + e.Path
	}
	k := strconv.Quote(clip(e.Key, 100))
	return fmt.Sprintf("duplicate key %s%s: a JSON object may name each key only once; send %s once", k, where, k)
}

// CheckStrictJSON reports whether data is exactly one valid JSON value
// (surrounding whitespace allowed) in which no object names a key twice,
// at any depth. encoding/json silently keeps the last of two equal keys;
// callers that must not guess which one the sender meant refuse the input
// instead. It returns nil, a *DuplicateKeyError, or an error starting with
// "invalid JSON: ". Messages read well after a prefix such as
// "<operation>: ". It never panics.
func CheckStrictJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // 1e400 is valid JSON, not a float64

	// One frame per open object or array.
	type frame struct {
		object bool
		keys   map[string]struct{}
		key    string // object: the key whose value is being read
		index  int    // array: the index of the value being read
		// wantKey: in an object, the next string token is a key.
		wantKey bool
	}
	var stack []frame
	pathOf := func() string {
		var b strings.Builder
		for i := range stack[:len(stack)-1] {
			f := &stack[i]
			if f.object {
				writePathKey(&b, f.key)
			} else {
				fmt.Fprintf(&b, "[%d]", f.index)
			}
		}
		return b.String()
	}
	// valueDone advances the enclosing frame after one value.
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		f := &stack[len(stack)-1]
		if f.object {
			f.wantKey = true
		} else {
			f.index++
		}
	}

	seen := false // the top-level value has started
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if !seen {
				return errors.New("invalid JSON: empty input")
			}
			if len(stack) > 0 {
				return errors.New("invalid JSON: unexpected end of input")
			}
			return nil
		}
		if err != nil {
			return invalidJSON(err)
		}
		if len(stack) == 0 && seen {
			return errors.New("invalid JSON: data after the top-level value")
		}
		seen = true
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if len(stack) >= maxJSONDepth {
					return fmt.Errorf("invalid JSON: nested more than %d levels deep", maxJSONDepth)
				}
				stack = append(stack, frame{object: v == '{', wantKey: v == '{'})
			case '}', ']':
				if len(stack) == 0 { // the decoder refuses this; be safe
					return fmt.Errorf("invalid JSON: unexpected %q", rune(v))
				}
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				f := &stack[n-1]
				if _, dup := f.keys[v]; dup {
					return &DuplicateKeyError{Key: v, Path: pathOf()}
				}
				if f.keys == nil {
					f.keys = map[string]struct{}{}
				}
				f.keys[v] = struct{}{}
				f.key = v
				f.wantKey = false
				continue
			}
			valueDone()
		default: // number, bool, null
			valueDone()
		}
	}
}

// writePathKey appends .key (or ["key"] when key is not a plain name; no
// dot before the first element).
func writePathKey(b *strings.Builder, key string) {
	plain := key != ""
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			plain = false
			break
		}
	}
	switch {
	case !plain:
		b.WriteString("[" + strconv.Quote(clip(key, 100)) + "]")
	case b.Len() == 0:
		b.WriteString(key)
	default:
		b.WriteString("." + key)
	}
}

// invalidJSON words a decoder error.
func invalidJSON(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("invalid JSON: unexpected end of input")
	case errors.As(err, &se):
		return fmt.Errorf("invalid JSON: %s (at byte %d)", se.Error(), se.Offset)
	default:
		return fmt.Errorf("invalid JSON: %w", err)
	}
}
