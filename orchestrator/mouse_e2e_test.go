package orchestrator

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// mousecat is testdata/mousecat.py: it enables the DECSET modes it is
// given and prints every read from its terminal as "IN <hex>".
func mousecat(t testing.TB, modes ...string) []string {
	t.Helper()
	py := testenv.LookPath(t, "python3", "apt-get install python3")
	_, file, _, _ := runtime.Caller(0)
	return append([]string{py, filepath.Join(filepath.Dir(file), "testdata", "mousecat.py")}, modes...)
}

// launchMousecat starts mousecat with modes and waits until it is ready.
func launchMousecat(t *testing.T, o *Orchestrator, modes ...string) string {
	t.Helper()
	return launchMousecatSized(t, o, 80, modes...)
}

func launchMousecatSized(t *testing.T, o *Orchestrator, columns int, modes ...string) string {
	t.Helper()
	info, err := o.Launch(tctx(t), LaunchSpec{Command: mousecat(t, modes...), Cwd: t.TempDir(), Columns: columns, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, o, info.Terminal, "READY")
	return info.Terminal
}

// received writes a sentinel byte after whatever the test sent and
// returns the hex of every byte mousecat read, in order, sentinel
// included: bytes the test expected to arrive come before "5a", and
// nothing else was delivered.
func received(t *testing.T, o *Orchestrator, id string) string {
	t.Helper()
	r, err := o.WriteRaw(tctx(t), id, []byte("Z"), &tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `5a$`, TimeoutMS: 20000})
	if err != nil || r.Wait == nil || !r.Wait.Matched {
		snap, _ := o.Snapshot(context.Background(), id)
		t.Fatalf("sentinel: %+v %v\n%s", r, err, strings.Join(snap.Lines, "\n"))
	}
	text, err := o.Read(tctx(t), id, 100000)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, line := range strings.Split(text.Text, "\n") {
		if h, ok := strings.CutPrefix(strings.TrimSpace(line), "IN "); ok {
			all.WriteString(h)
		}
	}
	return all.String()
}

// Each mouse mode a program can enable gets the reports a real terminal
// sends in that mode (checked byte by byte, against the formats written
// out here, not against the encoder), for each kind of action.
func TestMouseEndToEnd(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 11 s on a loaded 2-core machine")
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	at := &tools.Cell{Row: 2, Column: 5} // 1-based: column 6 (0x26 after +32), row 3 (0x23)
	cases := []struct {
		name    string
		modes   []string
		mouse   tools.MouseMode
		spec    MouseSpec
		wantHex string
	}{
		{"x10 press only", []string{"9"}, tools.MouseMode{Tracking: "x10", Encoding: "default"},
			MouseSpec{Kind: "click", At: at}, "1b5b4d202623"},
		{"normal click, default encoding", []string{"1000"}, tools.MouseMode{Tracking: "normal", Encoding: "default"},
			MouseSpec{Kind: "click", At: at}, "1b5b4d202623" + "1b5b4d232623"},
		{"normal right click with ctrl", []string{"1000"}, tools.MouseMode{Tracking: "normal", Encoding: "default"},
			MouseSpec{Kind: "click", At: at, Button: "right", Modifiers: []string{"ctrl"}}, "1b5b4d322623" + "1b5b4d332623"},
		{"wheel down, sgr", []string{"1000", "1006"}, tools.MouseMode{Tracking: "normal", Encoding: "sgr"},
			MouseSpec{Kind: "wheel", At: at, DeltaY: 2}, hexOf("\x1b[<65;6;3M\x1b[<65;6;3M")},
		{"double click, sgr", []string{"1000", "1006"}, tools.MouseMode{Tracking: "normal", Encoding: "sgr"},
			MouseSpec{Kind: "click", At: at, Count: 2}, hexOf("\x1b[<0;6;3M\x1b[<0;6;3m\x1b[<0;6;3M\x1b[<0;6;3m")},
		{"drag, utf8", []string{"1002", "1005"}, tools.MouseMode{Tracking: "button", Encoding: "utf8"},
			MouseSpec{Kind: "drag", At: at, To: &tools.Cell{Row: 2, Column: 100}},
			""}, // checked below: column 101 needs two UTF-8 bytes
		{"hover, urxvt", []string{"1003", "1015"}, tools.MouseMode{Tracking: "any", Encoding: "urxvt"},
			MouseSpec{Kind: "hover", At: at}, hexOf("\x1b[67;6;3M")},
		{"wheel up, any-motion sgr", []string{"1003", "1006"}, tools.MouseMode{Tracking: "any", Encoding: "sgr"},
			MouseSpec{Kind: "wheel", At: at, DeltaY: -1, Modifiers: []string{"shift"}}, hexOf("\x1b[<68;6;3M")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := launchMousecatSized(t, o, 120, tc.modes...)
			caps, err := o.Capabilities(context.Background(), id)
			if err != nil || caps.Mouse != tc.mouse || !caps.Modes.Mouse {
				t.Fatalf("capabilities: %+v %v, want mouse %+v", caps, err, tc.mouse)
			}
			r, err := o.Mouse(tctx(t), id, tc.spec, nil)
			if err != nil {
				t.Fatalf("mouse: %v", err)
			}
			if r.Mouse != tc.mouse || r.At != *tc.spec.At || r.Bytes == 0 {
				t.Errorf("result %+v", r)
			}
			want := tc.wantHex
			if tc.spec.Kind == "drag" {
				// press at (6,3); motion 32 through 16 steps to column 101
				// (101+32 = 133 = U+0085: c2 85); release 3 at the end.
				got := received(t, o, id)
				if !strings.HasPrefix(got, "1b5b4d202623") || !strings.HasSuffix(got, "1b5b4d23c28523"+"5a") ||
					strings.Count(got, "1b5b4d40") != 16 {
					t.Fatalf("drag delivered %s", got)
				}
				return
			}
			if got := received(t, o, id); got != want+"5a" {
				t.Fatalf("delivered %s, want %s then the sentinel 5a", got, want)
			}
		})
	}
}

func hexOf(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteString(strings.ToLower(string("0123456789abcdef"[s[i]>>4]) + string("0123456789abcdef"[s[i]&15])))
	}
	return b.String()
}

// Mouse actions the program's modes do not allow are refused before
// anything is sent: the sentinel that follows arrives alone.
func TestMouseRefusedSendsNothing(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 15 s on a loaded 2-core machine")
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	cases := []struct {
		name  string
		modes []string
		spec  MouseSpec
		kind  tools.Kind
		text  string
	}{
		{"click, tracking off", nil, MouseSpec{Kind: "click", At: &tools.Cell{Row: 1, Column: 1}}, tools.KindNotRun, "input-mode-disabled"},
		{"wheel, tracking off", nil, MouseSpec{Kind: "wheel", At: &tools.Cell{Row: 1, Column: 1}, DeltaY: 3}, tools.KindNotRun, "input-mode-disabled"},
		{"hover without any-motion", []string{"1002", "1006"}, MouseSpec{Kind: "hover", At: &tools.Cell{Row: 1, Column: 1}}, tools.KindNotRun, "any-motion"},
		{"drag with normal tracking", []string{"1000"}, MouseSpec{Kind: "drag", At: &tools.Cell{Row: 1, Column: 1}, To: &tools.Cell{Row: 1, Column: 4}}, tools.KindNotRun, "button-event"},
		{"cell below the screen", []string{"1000"}, MouseSpec{Kind: "click", At: &tools.Cell{Row: 24, Column: 1}}, tools.KindUsage, "outside the screen (80 columns x 24 rows"},
		{"cell right of the screen", []string{"1000"}, MouseSpec{Kind: "click", At: &tools.Cell{Row: 0, Column: 80}}, tools.KindUsage, "outside the screen"},
		{"drag ends outside", []string{"1002"}, MouseSpec{Kind: "drag", At: &tools.Cell{Row: 1, Column: 1}, To: &tools.Cell{Row: 99, Column: 4}}, tools.KindUsage, "outside the screen"},
		{"at and ref", []string{"1000"}, MouseSpec{Kind: "click", At: &tools.Cell{}, Ref: "screen:0,0,1@1"}, tools.KindUsage, "exactly one of"},
		{"neither at nor ref", []string{"1000"}, MouseSpec{Kind: "click"}, tools.KindUsage, "exactly one of"},
		{"a ref from the future", []string{"1000"}, MouseSpec{Kind: "click", Ref: "screen:0,0,5@99999999999"}, tools.KindUsage, "newer than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := launchMousecat(t, o, tc.modes...)
			_, err := o.Mouse(tctx(t), id, tc.spec, nil)
			var te *tools.Error
			if !errors.As(err, &te) || te.Kind != tc.kind || !strings.Contains(te.Error(), tc.text) {
				t.Fatalf("got %v, want kind %s containing %q", err, tc.kind, tc.text)
			}
			if tc.kind == tools.KindNotRun && te.Details["reason"] != "input-mode-disabled" {
				t.Errorf("details %v: want reason input-mode-disabled", te.Details)
			}
			if got := received(t, o, id); got != "5a" {
				t.Fatalf("the program received %s: want the sentinel 5a alone", got)
			}
		})
	}
}

// A ref from terminal_query clicks its text; once the text moved, the ref
// is stale (conflict, stale-ref) and nothing is sent.
func TestMouseRefs(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 3 s on a loaded 2-core machine")
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launchMousecat(t, o, "1000", "1006")
	q, err := o.Query(context.Background(), id, QuerySpec{Text: "READY"})
	if err != nil || len(q.Matches) != 1 {
		t.Fatalf("query: %+v %v", q, err)
	}
	m := q.Matches[0]
	if m.Row != 0 || m.Column != 0 || m.Length != 5 || m.Ref != "screen:0,0,5@"+itoa(q.Revision) {
		t.Fatalf("match %+v", m)
	}
	if _, err := o.Mouse(tctx(t), id, MouseSpec{Kind: "click", Ref: m.Ref}, nil); err != nil {
		t.Fatalf("click on a fresh ref: %v", err)
	}
	if got := received(t, o, id); got != hexOf("\x1b[<0;1;1M\x1b[<0;1;1m")+"5a" {
		t.Fatalf("delivered %s", got)
	}
	// Still valid: the screen moved on, but row 0 still says READY.
	if _, err := o.Mouse(tctx(t), id, MouseSpec{Kind: "click", Ref: m.Ref}, nil); err != nil {
		t.Fatalf("click on an old ref whose text is still there: %v", err)
	}
	received(t, o, id)
	// Clear the screen: the text is gone from its place.
	if _, err := o.WriteRaw(tctx(t), id, []byte("q"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 20000}); err != nil {
		t.Fatal(err)
	}
	id2 := launchMousecat(t, o, "1000")
	q2, _ := o.Query(context.Background(), id2, QuerySpec{Pattern: `READY \d+`})
	if len(q2.Matches) != 1 {
		t.Fatalf("query: %+v", q2)
	}
	if _, err := o.WriteRaw(tctx(t), id2, []byte("\x0c"), &tools.WaitSpec{Wait: tools.WaitText, Text: "IN 0c", TimeoutMS: 20000}); err != nil {
		t.Fatal(err)
	}
	// mousecat printed a line: scroll the READY line away with enough output.
	for range 25 {
		if _, err := o.WriteRaw(tctx(t), id2, []byte("x"), &tools.WaitSpec{Wait: tools.WaitText, Text: "IN 78", TimeoutMS: 20000}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = o.Mouse(tctx(t), id2, MouseSpec{Kind: "click", Ref: q2.Matches[0].Ref}, nil)
	var te *tools.Error
	if !errors.As(err, &te) || te.Kind != tools.KindConflict || te.Details["reason"] != "stale-ref" {
		t.Fatalf("click on a stale ref: %v", err)
	}
	if got := received(t, o, id2); strings.Contains(got, "1b5b") {
		t.Fatalf("a stale ref delivered a report: %s", got)
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

// After an orchestrator restart the mirror learns the modes tmux tracks
// (#{mouse_button_flag}, #{mouse_utf8_flag}, …) from the seed.
func TestMouseModesAfterRestart(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	dir := o.StateDir()
	id := launchMousecat(t, o, "1002", "1005")
	o.Close()
	o2 := openOrchestrator(t, srv, dir)
	caps, err := o2.Capabilities(context.Background(), id)
	if err != nil || caps.Mouse != (tools.MouseMode{Tracking: "button", Encoding: "utf8"}) {
		t.Fatalf("capabilities after restart: %+v %v", caps, err)
	}
	if _, err := o2.Mouse(tctx(t), id, MouseSpec{Kind: "click", At: &tools.Cell{Row: 0, Column: 0}}, nil); err != nil {
		t.Fatal(err)
	}
	if got := received(t, o2, id); got != "1b5b4d202121"+"1b5b4d232121"+"5a" {
		t.Fatalf("delivered %s", got)
	}
}
