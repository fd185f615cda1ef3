package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheckStrictJSON(t *testing.T) {
	t.Parallel()
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name, in string
		dupKey   string // a *DuplicateKeyError for this key
		dupPath  string
		wantErr  string // another error containing this
	}{
		{name: "empty object", in: `{}`},
		{name: "array", in: `[]`},
		{name: "scalars", in: `[1, -2.5e3, 1e400, "s", true, false, null]`},
		{name: "top-level scalar", in: ` "x" `},
		{name: "whitespace around", in: " \t\r\n{\"a\":1}\n"},
		{name: "same key in sibling objects", in: `{"a":{"a":1},"b":{"a":2},"c":[{"a":1},{"a":1}]}`},
		{name: "keys differing in case", in: `{"a":1,"A":2}`},
		{name: "key equal to a value", in: `{"a":"a","b":"a"}`},
		{name: "empty key once", in: `{"":1}`},
		{name: "10000 levels", in: deep(10000)},

		{name: "duplicate at top", in: `{"a":1,"a":2}`, dupKey: "a"},
		{name: "duplicate with other value types", in: `{"a":{},"b":1,"a":[]}`, dupKey: "a"},
		{name: "duplicate through an escape", in: `{"a":1,"\u0061":2}`, dupKey: "a"},
		{name: "duplicate empty key", in: `{"":1,"":2}`, dupKey: ""},
		{name: "duplicate nested", in: `{"x":{"y":1,"y":2}}`, dupKey: "y", dupPath: "x"},
		{name: "duplicate deep", in: `{"wait":{"a":[0,{"k":1,"k":2}]}}`, dupKey: "k", dupPath: "wait.a[1]"},
		{name: "duplicate under odd key", in: `{"a b":{"c":1,"c":1}}`, dupKey: "c", dupPath: `["a b"]`},
		{name: "duplicate in array element", in: `[{"a":1},{"a":1,"a":1}]`, dupKey: "a", dupPath: "[1]"},

		{name: "nothing", in: ``, wantErr: "invalid JSON: empty input"},
		{name: "blank", in: "  \n", wantErr: "invalid JSON: empty input"},
		{name: "unterminated", in: `{"a":1`, wantErr: "invalid JSON"},
		{name: "trailing comma in object", in: `{"a":1,}`, wantErr: "invalid JSON"},
		{name: "trailing comma in array", in: `[1,]`, wantErr: "invalid JSON"},
		{name: "missing colon", in: `{"a" 1}`, wantErr: "invalid JSON"},
		{name: "two values", in: `{} {}`, wantErr: "invalid JSON: data after the top-level value"},
		{name: "two scalars", in: `1 2`, wantErr: "invalid JSON"},
		{name: "garbage after", in: `{}x`, wantErr: "invalid JSON"},
		{name: "bad literal", in: `nul`, wantErr: "invalid JSON"},
		{name: "stray close", in: `}`, wantErr: "invalid JSON"},
		{name: "10001 levels", in: deep(10001), wantErr: "nested more than 10000 levels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckStrictJSON([]byte(tc.in))
			if valid := json.Valid([]byte(tc.in)); valid != (err == nil || tc.dupKey != "" || tc.name == "duplicate empty key") {
				t.Fatalf("json.Valid = %v but CheckStrictJSON = %v", valid, err)
			}
			var de *DuplicateKeyError
			switch {
			case tc.dupKey != "" || strings.HasPrefix(tc.name, "duplicate"):
				if !errors.As(err, &de) || de.Key != tc.dupKey || de.Path != tc.dupPath {
					t.Fatalf("got %#v, want duplicate %q at %q", err, tc.dupKey, tc.dupPath)
				}
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.As(err, &de) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestCheckStrictJSONMessages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{"text":"a","text":"b"}`, `terminal_type: duplicate key "text": a JSON object may name each key only once; send "text" once`},
		{`{"wait":{"pattern":"a","pattern":"b"}}`, `terminal_type: duplicate key "pattern" in wait: a JSON object may name each key only once; send "pattern" once`},
	} {
		err := CheckStrictJSON([]byte(tc.in))
		if err == nil {
			t.Fatalf("%s: accepted", tc.in)
		}
		if got := "terminal_type: " + err.Error(); got != tc.want {
			t.Fatalf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// refHasDuplicate is an independent reference for valid JSON: a recursive
// walk over json.RawMessage values.
func refHasDuplicate(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	switch raw[0] {
	case '{':
		dec := json.NewDecoder(bytes.NewReader(raw))
		if _, err := dec.Token(); err != nil {
			return false
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return false
			}
			k, _ := tok.(string)
			if seen[k] {
				return true
			}
			seen[k] = true
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return false
			}
			if refHasDuplicate(v) {
				return true
			}
		}
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return false
		}
		for _, e := range elems {
			if refHasDuplicate(e) {
				return true
			}
		}
	}
	return false
}

func FuzzCheckStrictJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":1,"a":2}`, `{"operation":"terminal_list","args":{}}`,
		`{"operation":"x","Operation":"y"}`, `{"a":{"b":[1,{"c":2,"c":3}]}}`,
		`{"a":1,"\u0061":2}`, `{"\ud800":1,"\udfff":2}`, `[1,2,3]`, `"s"`, `1e400`,
		`{"a":1,}`, `{} {}`, `[`, `{"a"`, "\xff", `{"a":"\xff"}`, ` null `,
		strings.Repeat("[", 300), `{"a":[{"b":{}},{"b":{}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckStrictJSON(data) // must not panic
		valid := json.Valid(data)
		var de *DuplicateKeyError
		switch {
		case !valid:
			if err == nil {
				t.Fatalf("accepted invalid JSON %q", data)
			}
		case bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) > 200:
			// The reference is quadratic in the depth; validity agreed.
			var se *DuplicateKeyError
			if err != nil && !errors.As(err, &se) {
				t.Fatalf("refused valid JSON %q: %v", data, err)
			}
		case refHasDuplicate(data):
			if !errors.As(err, &de) {
				t.Fatalf("%q has a duplicate key, got %v", data, err)
			}
		default:
			if err != nil {
				t.Fatalf("refused valid JSON without duplicates %q: %v", data, err)
			}
			// What encoding/json accepts as an object, re-encoded, passes.
			var m map[string]any
			if json.Unmarshal(data, &m) == nil && m != nil {
				out, _ := json.Marshal(m)
				if err := CheckStrictJSON(out); err != nil {
					t.Fatalf("refused re-encoded %s: %v", out, err)
				}
			}
		}
	})
}
