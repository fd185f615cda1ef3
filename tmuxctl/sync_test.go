package tmuxctl

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// recordedSourceFile is what tmux 3.3a sent a control client (after its
// start block) for three rounds of
//
//	source-file -- CONF
//	display-message -p MARKn
//	list-sessions -F "#{session_name} ok"
//
// with CONF the orchestrator's nine-command config (one comment line), a
// config whose second line does not parse, and one whose second command
// fails at run time. source-file answers with its own empty block, then
// every command of the file gets a block (flags 1, like ours); a number is
// skipped (tmux's completion callback, which prints parse errors as bare
// lines outside any block); a parse error runs none of the file.
const recordedSourceFile = `%begin 1796114116 269 1
%end 1796114116 269 1
%begin 1796114116 270 1
%end 1796114116 270 1
%begin 1796114116 271 1
%end 1796114116 271 1
%begin 1796114116 272 1
%end 1796114116 272 1
%begin 1796114116 273 1
%end 1796114116 273 1
%begin 1796114116 274 1
%end 1796114116 274 1
%begin 1796114116 275 1
%end 1796114116 275 1
%begin 1796114116 276 1
%end 1796114116 276 1
%begin 1796114116 277 1
%end 1796114116 277 1
%begin 1796114116 278 1
%end 1796114116 278 1
%begin 1796114116 280 1
MARK1
%end 1796114116 280 1
%begin 1796114116 281 1
adm ok
%end 1796114116 281 1
%begin 1796114117 282 1
%end 1796114117 282 1
/tmp/probe/conf3:2: unknown command: bogus-cmd
%begin 1796114117 284 1
MARK2
%end 1796114117 284 1
%begin 1796114117 285 1
adm ok
%end 1796114117 285 1
%begin 1796114117 286 1
%end 1796114117 286 1
%begin 1796114117 287 1
%end 1796114117 287 1
%begin 1796114117 288 1
invalid option: nosuchoption
%error 1796114117 288 1
%begin 1796114117 289 1
%end 1796114117 289 1
%begin 1796114117 291 1
MARK3
%end 1796114117 291 1
%begin 1796114117 292 1
adm ok
%end 1796114117 292 1`

// TestSyncPairsRecordedSourceFile replays the recorded stream through the
// framer into a client whose pending requests are those three rounds:
// every list-sessions must get its own reply, not one of a config's
// blocks, and each source-file request collects its config's blocks and
// parse errors.
func TestSyncPairsRecordedSourceFile(t *testing.T) {
	t.Parallel()
	c := &Client{panes: map[string]*PaneStream{}}
	var srcs, lists []*request
	for i := 1; i <= 3; i++ {
		src := &request{line: "source-file", want: 1, sync: fmt.Sprint("MARK", i), done: make(chan struct{})}
		list := &request{line: "list-sessions", want: 1, done: make(chan struct{})}
		srcs, lists = append(srcs, src), append(lists, list)
		c.pending = append(c.pending, src, list)
	}
	var f framer
	s := &clientSink{c: c, sawStart: true}
	for _, l := range strings.Split(recordedSourceFile, "\n") {
		f.line([]byte(l), s)
	}
	if len(c.pending) != 0 || c.unpaired != 0 {
		t.Fatalf("pending %d, unpaired %d after the stream", len(c.pending), c.unpaired)
	}
	for i, list := range lists {
		if outs, err := list.outputs(); err != nil || !reflect.DeepEqual(outs, [][]string{{"adm ok"}}) {
			t.Fatalf("round %d: list-sessions reply = %q, %v", i+1, outs, err)
		}
	}
	for i, src := range srcs {
		if outs, err := src.outputs(); err != nil || !reflect.DeepEqual(outs, [][]string{nil}) {
			t.Fatalf("round %d: source-file's own reply = %q, %v", i+1, outs, err)
		}
	}
	if n := len(srcs[0].inserted); n != 9 {
		t.Errorf("round 1: %d inserted blocks, want 9 (one per config command)", n)
	}
	if n, want := len(srcs[1].inserted), []string{"/tmp/probe/conf3:2: unknown command: bogus-cmd"}; n != 0 || !reflect.DeepEqual(srcs[1].stray, want) {
		t.Errorf("round 2: %d inserted blocks and stray %q, want none and %q", n, srcs[1].stray, want)
	}
	if ins := srcs[2].inserted; len(ins) != 3 || !ins[1].err || ins[1].lines[0] != "invalid option: nosuchoption" {
		t.Errorf("round 3: inserted = %+v, want 3 with the 2nd an error", ins)
	}
}

// TestSyncAfterOwnError: a line whose own command fails gets no inserted
// blocks (tmux dropped the rest of the line), and its marker, on a line of
// its own, still ends it.
func TestSyncAfterOwnError(t *testing.T) {
	t.Parallel()
	c := &Client{panes: map[string]*PaneStream{}}
	src := &request{line: "source-file /nonexistent", want: 1, sync: "MARK", done: make(chan struct{})}
	next := &request{line: "display-message -p x", want: 1, done: make(chan struct{})}
	c.pending = []*request{src, next}
	var f framer
	s := &clientSink{c: c, sawStart: true}
	for _, l := range strings.Split("%begin 1 298 1\n/nonexistent: No such file or directory\n%error 1 298 1\n"+
		"%begin 1 299 1\nMARK\n%end 1 299 1\n%begin 1 300 1\nx\n%end 1 300 1", "\n") {
		f.line([]byte(l), s)
	}
	var ce *CommandError
	if _, err := src.outputs(); !errors.As(err, &ce) || !strings.Contains(ce.Message, "No such file") {
		t.Fatalf("source-file error = %v", err)
	}
	if outs, err := next.outputs(); err != nil || outs[0][0] != "x" {
		t.Fatalf("next reply = %q, %v", outs, err)
	}
}

func TestInsertsCommands(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]bool{
		"source-file /x":            true,
		"  source /x":               true,
		"sou /x":                    true,
		"'source-file' /x":          true,
		`"source-fi\le" /x`:         true,
		"if-shell true 'x'":         true,
		"if -F 1 x":                 true,
		"run-shell -C 'x'":          true,
		"run x":                     true,
		"display-message -p source": false,
		"send-keys -t %1 -l source": false,
		"set -g status off":         false,
		"list-sessions":             false,
		"refresh-client -C 80x24":   false,
		"source-files /x":           false,
		"":                          false,
	} {
		if got := insertsCommands(line); got != want {
			t.Errorf("insertsCommands(%q) = %v, want %v", line, got, want)
		}
	}
}
