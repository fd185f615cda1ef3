package tools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Every bad input of termwright's tools that the table itself can see is
// refused as kind usage with a sentence naming the argument.
func TestValidateTerminalTools(t *testing.T) {
	t.Parallel()
	tests := []struct {
		op, args string
		wantErr  string // substring; "" = valid
	}{
		{"terminal_capabilities", `{"terminal":"a"}`, ""},
		{"terminal_query", `{"terminal":"a","text":"OK"}`, ""},
		{"terminal_query", `{"terminal":"a","pattern":"^\\[ *OK *\\]$","nth":2}`, ""},
		{"terminal_query", `{"terminal":"a"}`, `exactly one of "text" (literal) and "pattern"`},
		{"terminal_query", `{"terminal":"a","text":"x","pattern":"x"}`, `exactly one of "text"`},
		{"terminal_query", `{"terminal":"a","pattern":"("}`, "not a valid Go RE2"},
		{"terminal_query", `{"terminal":"a","text":"x","nth":0}`, `"nth" must be an integer from 1`},
		{"terminal_click", `{"terminal":"a","at":{"row":0,"column":3}}`, ""},
		{"terminal_click", `{"terminal":"a","ref":"screen:1,2,3@4","button":"right","count":2,"modifiers":["shift","ctrl"]}`, ""},
		{"terminal_click", `{"terminal":"a"}`, `exactly one of "at"`},
		{"terminal_click", `{"terminal":"a","at":{"row":0,"column":0},"ref":"screen:0,0,1@1"}`, `exactly one of "at"`},
		{"terminal_click", `{"terminal":"a","at":{"row":-1,"column":0}}`, `"at.row" must be an integer from 0 to 999, got -1`},
		{"terminal_click", `{"terminal":"a","at":{"row":1,"column":1000}}`, `"at.column" must be an integer from 0 to 999`},
		{"terminal_click", `{"terminal":"a","at":{"row":1}}`, `missing required argument "at.column"`},
		{"terminal_click", `{"terminal":"a","at":{"row":1,"column":1,"x":1}}`, `unknown argument "at.x"`},
		{"terminal_click", `{"terminal":"a","at":[1,2]}`, `"at" must be an object like {"row":…,"column":…}`},
		{"terminal_click", `{"terminal":"a","ref":"1,2,3"}`, "not screen:ROW,COL,LEN@REVISION"},
		{"terminal_click", `{"terminal":"a","ref":"screen:1,2,0@3"}`, "length 0"},
		{"terminal_click", `{"terminal":"a","at":{"row":1,"column":1},"count":4}`, `"count" must be an integer from 1 to 3`},
		{"terminal_click", `{"terminal":"a","at":{"row":1,"column":1},"button":"back"}`, "must be one of left, middle, right"},
		{"terminal_click", `{"terminal":"a","at":{"row":1,"column":1},"modifiers":["meta"]}`, "must be one of shift, alt, ctrl"},
		{"terminal_hover", `{"terminal":"a","at":{"row":1,"column":1}}`, ""},
		{"terminal_hover", `{"terminal":"a","at":{"row":1,"column":1},"button":"left"}`, `unknown argument "button"`},
		{"terminal_wheel", `{"terminal":"a","at":{"row":1,"column":1},"delta_y":-3}`, ""},
		{"terminal_wheel", `{"terminal":"a","at":{"row":1,"column":1},"delta_y":0}`, "delta_y must not be 0"},
		{"terminal_wheel", `{"terminal":"a","at":{"row":1,"column":1}}`, `missing required argument "delta_y"`},
		{"terminal_drag", `{"terminal":"a","from":{"row":1,"column":1},"to":{"row":2,"column":5}}`, ""},
		{"terminal_drag", `{"terminal":"a","from":{"row":1,"column":1}}`, `missing required argument "to"`},
		{"terminal_write_raw", `{"terminal":"a","text":"\u001b[A"}`, ""},
		{"terminal_write_raw", `{"terminal":"a","base64":"G1tB"}`, ""},
		{"terminal_write_raw", `{"terminal":"a","base64":"G1tB!!"}`, `"base64" does not decode`},
		{"terminal_write_raw", `{"terminal":"a","base64":"G1t"}`, `"base64" does not decode`},
		{"terminal_write_raw", `{"terminal":"a"}`, `exactly one of "text" and "base64"`},
		{"terminal_write_raw", `{"terminal":"a","text":"x","base64":"eA=="}`, `exactly one of "text" and "base64"`},
		{"terminal_launch", `{"logs":[{"path":"/tmp/app.log","label":"app"},{"path":"x.log"}]}`, ""},
		{"terminal_launch", `{"logs":[]}`, `"logs" must not be an empty array`},
		{"terminal_launch", `{"logs":[{"label":"app"}]}`, `missing required argument "logs[0].path"`},
		{"terminal_launch", `{"logs":[{"path":"/a","mode":"x"}]}`, `unknown argument "logs[0].mode"`},
		{"terminal_launch", `{"logs":{"path":"/a"}}`, `"logs" must be an array of objects`},
		{"terminal_launch", `{"logs":["/a"]}`, `"logs[0]" must be an object`},
	}
	for _, tt := range tests {
		op, ok := Lookup(tt.op)
		if !ok {
			t.Fatalf("no operation %s", tt.op)
		}
		err := op.Validate(json.RawMessage(tt.args))
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s %s: %v", tt.op, tt.args, err)
			}
			continue
		}
		var te *Error
		if !errors.As(err, &te) || te.Kind != KindUsage || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s %s: got %v, want usage error containing %q", tt.op, tt.args, err, tt.wantErr)
		}
	}
}

func TestRefRoundTrip(t *testing.T) {
	t.Parallel()
	r := Ref{Row: 3, Column: 17, Length: 5, Revision: 1<<32 + 9}
	got, err := ParseRef(r.String())
	if err != nil || got != r {
		t.Fatalf("ParseRef(%q) = %+v, %v", r.String(), got, err)
	}
	for _, bad := range []string{"", "screen:", "screen:1,2@3", "screen:1,2,3", "screen:a,2,3@4", "screen:1,2,3@-4", "scr:1,2,3@4", "screen:-1,2,3@4"} {
		if _, err := ParseRef(bad); err == nil {
			t.Errorf("ParseRef(%q) accepted", bad)
		}
	}
}

func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"screen:1,2,3@4", "screen:0,0,1@0", "screen:,,@", "screen:1,2,3@18446744073709551615"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		back, err := ParseRef(r.String())
		if err != nil || back != r {
			t.Fatalf("%q parsed to %+v, which does not round-trip: %+v %v", s, r, back, err)
		}
	})
}
