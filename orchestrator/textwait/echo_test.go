package textwait

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

func TestMaskEcho(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		text   string // the output; "|" marks the input position (removed)
		prefix string // the cursor row's text when the input was typed
		inputs []string
		probe  string
		found  bool
	}{
		{"plain echo hidden", "$ |sleep 1; echo READY\n", "$ ", []string{"sleep 1; echo READY"}, "READY", false},
		{"output after echo kept", "$ |sleep 1; echo READY\nREADY\n", "$ ", []string{"sleep 1; echo READY"}, "READY", true},
		{"wrapped echo hidden", "$ |sleep 1; echo RE \nADY\n", "$ ", []string{"sleep 1; echo READY"}, "READY", false},
		{"wrapped at a word", "$ |head; echo \nFLOOD-DONE\n", "$ ", []string{"head; echo FLOOD-DONE"}, "FLOOD-DONE", false},
		{"wrapped at a trimmed space", "$ |head; echo\nFLOOD-DONE\n", "$ ", []string{"head; echo FLOOD-DONE"}, "FLOOD-DONE", false},
		{"no inputs", "|READY", "", nil, "READY", true},
		{"multi-line input", "> |a READY\n> b\nREADY", "> ", []string{"a READY\nb"}, "READY", true},
		{"input never echoed", "|READY", "", []string{"secret"}, "READY", true},
		// CONTRACT §18: only an echo at the input position is masked.
		{"stty -echo: printed back inside output", "|AFTER-go42\n", "", []string{"go42"}, "AFTER-go42", true},
		{"stty -echo after a prompt", "> |AFTER-go42\n", "> ", []string{"go42"}, "go42", true},
		{"echo after the program's own output", "$ |building...\nREADY\n", "$ ", []string{"READY"}, "READY", true},
		{"line redrawn with its prompt", "$ |e\n$ echo hello\n", "$ ", []string{"echo hello"}, "hello", false},
		{"line redrawn in pieces", "$ |ec\nech\n$ echo hello\nhello\n", "$ ", []string{"echo hello"}, "hello\nhello", false},
		{"echo beyond the window", "|" + strings.Repeat("\n", 2000) + "go42", "", []string{"go42"}, "go42", true},
		{"later lines need the first", "|x1\ny2\n", "", []string{"a1\ny2"}, "y2", true},
	}
	for _, tt := range tests {
		at := strings.Index(tt.text, "|")
		text := strings.Replace(tt.text, "|", "", 1)
		var ins []Input
		var ats []int
		for k, in := range tt.inputs {
			ins = append(ins, Input{Seq: uint64(k + 1), Prefix: tt.prefix, Text: in})
			ats = append(ats, at)
		}
		got := MaskEcho(text, ins, ats)
		if strings.Contains(got, tt.probe) != tt.found {
			t.Errorf("%s: MaskEcho(%q) = %q: contains %q = %v, want %v", tt.name, text, got, tt.probe, !tt.found, tt.found)
		}
		if len(got) != len(text) {
			t.Errorf("%s: masking changed the length", tt.name)
		}
	}
}

func TestMaskRows(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		rows   []string
		prefix string
		input  string
		probe  string
		found  bool
	}{
		{"echo after the prompt", []string{"$ echo READY", "READY"}, "$ ", "echo READY", "READY\n", true},
		{"only the echo", []string{"$ echo READY", "$"}, "$ ", "echo READY", "READY", false},
		{"not echoed, inside output", []string{"AFTER-go42", "$"}, "", "go42", "go42", true},
		{"not echoed after a prompt", []string{"> AFTER-go42"}, "> ", "go42", "go42", true},
	} {
		got := MaskRows(tt.rows, []Input{{Seq: 1, Prefix: tt.prefix, Text: tt.input}})
		if strings.Contains(got, tt.probe) != tt.found {
			t.Errorf("%s: MaskRows(%q) = %q: contains %q = %v, want %v", tt.name, tt.rows, got, tt.probe, !tt.found, tt.found)
		}
	}
}

func TestQuiet(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		noise, prefix, line string
		want                bool
	}{
		{"", "", "go42", true},
		{"  \n", "", "go42", true},
		{"AFTER-", "", "go42", false},
		{"$ ", "$ ", "echo hi", true},
		{"e\n$ ech", "$ ", "echo hi", true},
		{"\x00\x00", "", "go", true},
		{"$ x", "$ ", "echo hi", false},
		{"> AFTER-", "> ", "go42", false},
	} {
		if got := quiet([]byte(tt.noise), tt.prefix, tt.line); got != tt.want {
			t.Errorf("quiet(%q, %q, %q) = %v, want %v", tt.noise, tt.prefix, tt.line, got, tt.want)
		}
	}
}

// Inputs typed at random points of random output, echoed or not, with a
// line editor's noise or a program's output around them: the incremental
// scan masks as a search of the whole text does, piece by piece.
func TestTextScanEchoAgreesWithWholeText(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	words := []string{"$ ", "go42", "go", "AFTER-", "\r\n", " ", "e", "ech", "echo go42", "x", "\r", "> ", "READY", "\x1b[K"}
	inputs := []string{"go42", "echo go42", "go42\r", "a\rgo42", "READY"}
	specs := []tools.WaitSpec{
		{Wait: tools.WaitText, Text: "go42"},
		{Wait: tools.WaitText, Text: "AFTER-go42"},
		{Wait: tools.WaitRegex, Pattern: `^go42$`},
		{Wait: tools.WaitRegex, Pattern: `(?s)echo.*READY`},
	}
	n := newSrc(t)
	for trial := range 3000 {
		// A fresh line and no inputs kept from the trial before.
		if err := n.Write([]byte("\r\n")); err != nil {
			t.Fatal(err)
		}
		n.inputs = nil
		p := pattern(t, specs[trial%len(specs)])
		baseline := n.Revision()
		scan := New(p, baseline)
		for range 2 + rng.IntN(12) {
			if rng.IntN(4) == 0 {
				n.typed(inputs[rng.IntN(len(inputs))])
			}
			var out []byte
			for range rng.IntN(4) {
				out = append(out, words[rng.IntN(len(words))]...)
			}
			if err := n.Write(out); err != nil {
				t.Fatal(err)
			}
			ok, m := scan.Match(n, nil)
			fok, fm := fullMatch(n, p, baseline)
			if ok != fok || (ok && m != fm) {
				txt, _ := n.TextSince(baseline)
				t.Fatalf("trial %d %+v: incremental %v %q, whole text %v %q; text %q, inputs %+v", trial, specs[trial%len(specs)], ok, m, fok, fm, txt, n.inputs)
			}
			if ok {
				break
			}
		}
	}
}
