package mcpserve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// FuzzIDFromPrefix: whatever a client sends, finding the id of a
// (truncated) request never panics, and a found id is valid JSON.
func FuzzIDFromPrefix(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":"`))
	f.Add([]byte(`{"id":"x"`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if id := idFromPrefix(data); id != nil && !json.Valid(id) {
			t.Fatalf("idFromPrefix(%q) = %q, not JSON", data, id)
		}
	})
}

// FuzzReadLine: the MCP line reader never returns more than the limit,
// flags every over-long line, and loses no line.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("a\nbb\r\nccc"), uint8(2))
	f.Add([]byte(""), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, lim uint8) {
		limit := int(lim) + 1
		r := bufio.NewReaderSize(bytes.NewReader(data), 16)
		lines := 0
		for i := 0; i < len(data)+2; i++ {
			line, tooLong, err := readLine(r, limit)
			if len(line) > limit {
				t.Fatalf("line of %d bytes over the limit %d", len(line), limit)
			}
			if len(line) > 0 || tooLong {
				lines++
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatal(err)
				}
				break
			}
		}
		if want := bytes.Count(data, []byte("\n")) + 1; lines > want {
			t.Fatalf("%d lines from %d line ends", lines, want-1)
		}
	})
}

// FuzzDropInjected: whatever arguments a host sends, dropping the
// injected ones never panics, keeps valid JSON valid, removes them from
// the top level and leaves every other member as it was.
func FuzzDropInjected(f *testing.F) {
	f.Add([]byte(`{"terminal":"a","wait_for_previous":true}`))
	f.Add([]byte(`{"wait_for_previous":{"x":[1,2]},"text":"wait_for_previous"}`))
	f.Add([]byte(`{"a":1,"a":2,"wait_for_previous":1}`))
	f.Add([]byte(`[1]`))
	f.Add([]byte(`{"wait\u005ffor_previous":true}`))
	op, _ := tools.Lookup("terminal_type")
	f.Fuzz(func(t *testing.T, data []byte) {
		out := dropInjected(op, data)
		if !json.Valid(data) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("dropInjected(%q) = %q, not JSON", data, out)
		}
		var in, got map[string]json.RawMessage
		if json.Unmarshal(data, &in) != nil {
			return
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("dropInjected(%q) = %q: %v", data, out, err)
		}
		if _, ok := got["wait_for_previous"]; ok {
			t.Fatalf("wait_for_previous kept: %q", out)
		}
		delete(in, "wait_for_previous")
		if len(in) != len(got) {
			t.Fatalf("members %d → %d: %q → %q", len(in), len(got), data, out)
		}
	})
}

// FuzzCanonicalArgs: args that pass Validate still pass it after
// CanonicalArgs, and their integers then decode into Go ints.
func FuzzCanonicalArgs(f *testing.F) {
	f.Add("terminal_resize", []byte(`{"terminal":"a","columns":8e1,"rows":24.0}`))
	f.Add("terminal_wait_for", []byte(`{"terminal":"a","wait":"quiet","quiet_ms":1E2}`))
	f.Add("terminal_submit", []byte(`{"terminal":"a","text":"x","wait":{"wait":"quiet","timeout_ms":1.5e3}}`))
	f.Fuzz(func(t *testing.T, name string, args []byte) {
		op, ok := tools.Lookup(name)
		if !ok || op.Validate(args) != nil {
			return
		}
		c := op.CanonicalArgs(args)
		if err := op.Validate(c); err != nil {
			t.Fatalf("%s %q → %q no longer validates: %v", name, args, c, err)
		}
		var v struct {
			Columns   int `json:"columns"`
			Rows      int `json:"rows"`
			QuietMs   int `json:"quiet_ms"`
			TimeoutMs int `json:"timeout_ms"`
			Wait      any `json:"wait"`
		}
		if err := json.Unmarshal(c, &v); err != nil {
			t.Fatalf("%s %q → %q does not decode: %v", name, args, c, err)
		}
	})
}
