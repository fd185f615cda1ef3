package mcpserve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
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
