package tmuxctl

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// recorder is a sink that records everything in order.
type recorder struct {
	out      map[string][]byte
	events   []Event
	replies  []reply
	foreigns []reply
	strays   []string
	order    []string
}

func (r *recorder) output(paneB, escaped []byte) {
	if r.out == nil {
		r.out = map[string][]byte{}
	}
	pane := string(paneB)
	r.out[pane] = AppendDecoded(r.out[pane], escaped)
	r.order = append(r.order, "output "+pane)
}
func (r *recorder) event(ev Event) {
	r.events = append(r.events, ev)
	r.order = append(r.order, "event "+EventName(ev))
}
func (r *recorder) reply(rp reply) {
	r.replies = append(r.replies, rp)
	r.order = append(r.order, "reply "+rp.number)
}
func (r *recorder) foreign(rp reply) {
	r.foreigns = append(r.foreigns, rp)
	r.order = append(r.order, "foreign "+rp.number)
}

func (r *recorder) stray(line []byte) {
	r.strays = append(r.strays, string(line))
	r.order = append(r.order, "stray")
}

func feed(stream string) *recorder {
	var f framer
	r := &recorder{}
	for _, l := range strings.Split(stream, "\n") {
		f.line([]byte(l), r)
	}
	return r
}

func TestFramer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		stream  string
		order   []string
		replies [][]string
		errs    []bool
	}{
		{
			name:    "start block then reply",
			stream:  "%begin 1 10 0\n%end 1 10 0\n%session-changed $0 a\n%begin 1 11 1\nhi\n%end 1 11 1",
			order:   []string{"foreign 10", "event session-changed", "reply 11"},
			replies: [][]string{{"hi"}},
			errs:    []bool{false},
		},
		{
			name:    "error reply keeps tmux's message",
			stream:  "%begin 1 12 1\nparse error: unknown command: bogus\n%error 1 12 1",
			order:   []string{"reply 12"},
			replies: [][]string{{"parse error: unknown command: bogus"}},
			errs:    []bool{true},
		},
		{
			name:    "content that looks like protocol stays content",
			stream:  "%begin 5 20 1\n%end 1 2 1\n%exit\n%output %1 fake\n%begin 5 21 1\n%error 5 20 0\n%end 5 20 1",
			order:   []string{"reply 20"},
			replies: [][]string{{"%end 1 2 1", "%exit", "%output %1 fake", "%begin 5 21 1", "%error 5 20 0"}},
			errs:    []bool{false},
		},
		{
			name:    "hook block between replies is not ours",
			stream:  "%begin 1 30 1\n%end 1 30 1\n%begin 1 31 0\nhook-a\n%end 1 31 0\n%begin 1 32 1\nx\n%end 1 32 1",
			order:   []string{"reply 30", "foreign 31", "reply 32"},
			replies: [][]string{nil, {"x"}},
			errs:    []bool{false, false},
		},
		{
			name:   "output and notifications inside a foreign block are dispatched",
			stream: "%begin 1 40 0\n%output %1 a\\015\n%window-add @2\nsome content\n%end 1 40 0",
			order:  []string{"output %1", "event window-add", "foreign 40"},
		},
		{
			name:   "extended output",
			stream: "%extended-output %3 12 : x\\033y\n%extended-output %3 0 : ",
			order:  []string{"output %3", "output %3"},
		},
		{
			name:   "garbage outside blocks is dropped",
			stream: "hello\n%begin nope\n%end 1 2 3\n\n%output\n%output nopane x",
			order:  []string{"stray"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := feed(tt.stream)
			if !reflect.DeepEqual(r.order, tt.order) {
				t.Fatalf("order = %q, want %q", r.order, tt.order)
			}
			for i, want := range tt.replies {
				if !reflect.DeepEqual(r.replies[i].lines, want) {
					t.Errorf("reply %d lines = %q, want %q", i, r.replies[i].lines, want)
				}
				if r.replies[i].err != tt.errs[i] {
					t.Errorf("reply %d err = %v, want %v", i, r.replies[i].err, tt.errs[i])
				}
			}
		})
	}
}

func TestFramerOutputBytes(t *testing.T) {
	t.Parallel()
	r := feed("%output %1 a\\015\\012b\n%extended-output %1 3 : \\134c d")
	if got, want := r.out["%1"], []byte("a\r\nb\\c d"); !bytes.Equal(got, want) {
		t.Fatalf("pane bytes = %q, want %q", got, want)
	}
}

func TestParseNotification(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want Event
	}{
		{"%exit", Exit{}},
		{"%exit server exited unexpectedly", Exit{Reason: "server exited unexpectedly"}},
		{"%pause %4", Pause{Pane: "%4"}},
		{"%continue %4", Continue{Pane: "%4"}},
		{"%pane-mode-changed %2", PaneModeChanged{Pane: "%2"}},
		{"%client-detached /dev/pts/3", ClientDetached{Client: "/dev/pts/3"}},
		{"%window-renamed @1 my window", WindowEvent{Name: "window-renamed", Window: "@1", Args: []string{"my window"}}},
		{"%window-add @7", WindowEvent{Name: "window-add", Window: "@7"}},
		{"%session-changed $1 ts-a", SessionEvent{Name: "session-changed", Args: []string{"$1", "ts-a"}}},
		{"%paste-buffer-changed buf0", PasteBufferChanged{Buffer: "buf0"}},
		{"%something-new a b", Unknown{Name: "something-new", Line: "%something-new a b"}},
		{"%layout-change @0 a29d,90x20,0,0,0 a29d,90x20,0,0,0 *", LayoutChange{
			Window: "@0", Layout: "a29d,90x20,0,0,0", VisibleLayout: "a29d,90x20,0,0,0", Flags: "*",
			Panes: []PaneSize{{Pane: "%0", Width: 90, Height: 20}},
		}},
	}
	for _, tt := range tests {
		if got := parseNotification(tt.line); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseNotification(%q) = %#v, want %#v", tt.line, got, tt.want)
		}
	}
}

func TestParseLayout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []PaneSize
		ok   bool
	}{
		{"a29d,90x20,0,0,0", []PaneSize{{"%0", 90, 20, 0, 0}}, true},
		{"b25d,80x24,0,0{40x24,0,0,1,39x24,41,0,2}", []PaneSize{{"%1", 40, 24, 0, 0}, {"%2", 39, 24, 41, 0}}, true},
		{"x,80x24,0,0[80x12,0,0,3,80x11,0,13{40x11,0,13,4,39x11,41,13,5}]", []PaneSize{
			{"%3", 80, 12, 0, 0}, {"%4", 40, 11, 0, 13}, {"%5", 39, 11, 41, 13}}, true},
		{"", nil, false},
		{"abcd", nil, false},
		{"abcd,80x24", nil, false},
		{"abcd,80x24,0,0{", nil, false},
		{"abcd,80x24,0,0,1junk", nil, false},
		{"abcd," + strings.Repeat("1x1,0,0{", 100), nil, false},
	}
	for _, tt := range tests {
		got, err := ParseLayout(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("ParseLayout(%q) err = %v, want ok=%v", tt.in, err, tt.ok)
			continue
		}
		if tt.ok && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseLayout(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// FuzzFramer feeds arbitrary line streams: the framer must never panic,
// and output lines it is given must decode to the encoded bytes exactly.
func FuzzFramer(f *testing.F) {
	f.Add([]byte("%begin 1 2 1\n%end 1 2 1\n%output %1 x\\015\n%exit"), []byte("payload"))
	f.Add([]byte("%begin 1 2 0\n%window-add @1\n%end 1 2 0"), []byte{0, 1, 0xff})
	f.Add([]byte("%layout-change @0 a,1x1,0,0{1x1,0,0,1,1x1,0,0,2} x *"), []byte{})
	f.Fuzz(func(t *testing.T, stream, payload []byte) {
		var fr framer
		r := &recorder{}
		for _, l := range bytes.Split(stream, []byte("\n")) {
			fr.line(l, r)
		}
		// A block left open swallows what follows; close it the way tmux
		// would, then check an output line still arrives bit-exact.
		if fr.open != nil {
			g := fr.open.guard
			fr.line([]byte(fmt.Sprintf("%%end %s %s %s", g.time, g.number, g.flags)), r)
		}
		r2 := &recorder{}
		fr.line(append([]byte("%output %99 "), Encode(payload)...), r2)
		if !bytes.Equal(r2.out["%99"], payload) && !(len(payload) == 0 && r2.out["%99"] == nil) {
			t.Fatalf("payload %q arrived as %q", payload, r2.out["%99"])
		}
	})
}

func FuzzParseLayout(f *testing.F) {
	f.Add("b25d,80x24,0,0{40x24,0,0,1,39x24,41,0,2}")
	f.Fuzz(func(t *testing.T, s string) {
		panes, err := ParseLayout(s)
		if err == nil && len(panes) == 0 {
			t.Fatalf("ParseLayout(%q) returned no panes and no error", s)
		}
	})
}
