package record

import (
	"bytes"
	"strings"
	"testing"
)

func scanAll(t testing.TB, cast string) ([]TextLine, ScanStats, error) {
	t.Helper()
	var out []TextLine
	st, err := ScanText(strings.NewReader(cast), func(l TextLine) bool { out = append(out, l); return true })
	return out, st, err
}

// A cast's output becomes lines of text: escape sequences stripped, a
// line split over events joined with its first event's time, a carriage
// return's overwrite kept, input and bad lines skipped.
func TestScanText(t *testing.T) {
	t.Parallel()
	cast := `{"version":2,"width":80,"height":24}
[0.5,"o","\u001b[1mbold\u001b[0m line\r\nsplit "]
[1.25,"i","typed"]
[1.5,"o","here\r\n"]
not an event
[2,"o","50%\r100%\r\n\u0018\u0007tail"]
`
	lines, st, err := scanAll(t, cast)
	if err != nil {
		t.Fatal(err)
	}
	want := []TextLine{{1, 500000, "bold line"}, {2, 500000, "split here"}, {3, 2000000, "100%"}, {4, 2000000, "tail"}}
	if len(lines) != len(want) {
		t.Fatalf("lines %+v, want %+v", lines, want)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, lines[i], want[i])
		}
	}
	if st.Skipped != 1 {
		t.Errorf("skipped %d, want 1", st.Skipped)
	}
	for _, bad := range []string{"", "garbage\n", "[1,\"o\",\"x\"]\n"} {
		if _, _, err := scanAll(t, bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	// An event line past MaxScanEvent is skipped, not held.
	huge := `{"version":2,"width":80,"height":24}` + "\n[1,\"o\",\"" + strings.Repeat("x", MaxScanEvent) + "\"]\n[2,\"o\",\"after\\n\"]\n"
	lines, st, err = scanAll(t, huge)
	if err != nil || st.Skipped != 1 || len(lines) != 1 || lines[0].Text != "after" {
		t.Fatalf("huge event: %+v %+v %v", lines, st, err)
	}
}

// FuzzScanText: any bytes end without a panic, with lines in order and
// each within MaxScanLine.
func FuzzScanText(f *testing.F) {
	f.Add([]byte(`{"version":2,"width":80,"height":24}` + "\n[0.1,\"o\",\"a\\r\\nb\"]\n"))
	f.Add([]byte("{}\n[\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		ScanText(bytes.NewReader(b), func(l TextLine) bool {
			n++
			if l.N != n || len(l.Text) > MaxScanLine {
				t.Fatalf("line %+v after %d", l, n-1)
			}
			return true
		})
	})
}
