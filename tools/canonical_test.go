package tools

import (
	"encoding/json"
	"testing"
)

func TestCanonicalIntegerArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		op, in, want string
	}{
		{"terminal_resize", `{"terminal":"a","columns":80.0,"rows":2.4e1}`, `{"columns":80,"rows":24,"terminal":"a"}`},
		{"terminal_resize", `{"terminal":"a","columns":8e1,"rows":24}`, `{"columns":80,"rows":24,"terminal":"a"}`},
		{"terminal_wait_for", `{"terminal":"a","wait":"quiet","quiet_ms":1E2,"timeout_ms":1000.000}`, `{"quiet_ms":100,"terminal":"a","timeout_ms":1000,"wait":"quiet"}`},
		{"terminal_submit", `{"terminal":"a","text":"x","wait":{"wait":"quiet","quiet_ms":5e2}}`, `{"terminal":"a","text":"x","wait":{"quiet_ms":500,"wait":"quiet"}}`},
		// Already plain: returned byte for byte (idempotency keys compare args).
		{"terminal_resize", `{"terminal":"a", "columns":80,"rows":24}`, `{"terminal":"a", "columns":80,"rows":24}`},
		{"session_info", ``, `{}`},
		// A string that looks like a number is not an integer argument.
		{"terminal_type", `{"terminal":"a","text":"1.0"}`, `{"terminal":"a","text":"1.0"}`},
	} {
		op, ok := Lookup(tc.op)
		if !ok {
			t.Fatalf("no operation %s", tc.op)
		}
		if err := op.Validate(json.RawMessage(tc.in)); err != nil {
			t.Fatalf("%s %s: Validate: %v", tc.op, tc.in, err)
		}
		got := string(op.CanonicalArgs(json.RawMessage(tc.in)))
		if got != tc.want {
			t.Errorf("%s %s: got %s, want %s", tc.op, tc.in, got, tc.want)
		}
	}
}

// After CanonicalArgs an integral number in any written form decodes into
// a Go int, as the handlers decode it.
func TestCanonicalIntegersDecode(t *testing.T) {
	t.Parallel()
	op, _ := Lookup("terminal_resize")
	for _, in := range []string{`24.0`, `2.4e1`, `240E-1`, `0.24e2`, `24`} {
		args := json.RawMessage(`{"terminal":"a","columns":80,"rows":` + in + `}`)
		if err := op.Validate(args); err != nil {
			t.Fatalf("%s: Validate: %v", args, err)
		}
		var v struct {
			Rows int `json:"rows"`
		}
		if err := DecodeArgs(op.CanonicalArgs(args), &v); err != nil || v.Rows != 24 {
			t.Errorf("%s: decode after CanonicalArgs: rows %d, %v", args, v.Rows, err)
		}
	}
}

// The overview guide is the MCP instructions: hosts cut them at 2,048
// characters (CONTRACT §10).
func TestOverviewFitsMCPInstructions(t *testing.T) {
	t.Parallel()
	text, ok := Guide(TopicOverview)
	if !ok {
		t.Fatal("no overview")
	}
	if n := len([]rune(text)); n > 2048 {
		t.Errorf("overview is %d characters, over the 2,048 hosts keep", n)
	}
	t.Logf("overview: %d characters", len([]rune(text)))
}
