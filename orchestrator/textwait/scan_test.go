package textwait

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// src is a mirror and the inputs typed into it: enough for a wait's
// text scan.
type src struct {
	*screen.Screen
	inputs []input
	seeded uint64
}

type input struct {
	rev uint64
	Input
}

func newSrc(t testing.TB) *src {
	t.Helper()
	s := screen.New(80, 24)
	t.Cleanup(func() { s.Close() })
	return &src{Screen: s}
}

// typed records input typed now, after the prompt the cursor's row shows.
func (s *src) typed(text string) {
	pt := s.InputPoint()
	s.inputs = append(s.inputs, input{rev: pt.Revision, Input: Input{Seq: uint64(len(s.inputs) + 1), At: pt.TextEnd, Prefix: pt.Prefix, Text: text}})
}

func (s *src) InputsAfter(rev, seq uint64) ([]Input, uint64) {
	var out []Input
	for _, in := range s.inputs {
		if in.rev >= rev && in.Seq > seq {
			out = append(out, in.Input)
		}
	}
	return out, uint64(len(s.inputs))
}

func (s *src) SeededAfter(rev uint64) bool { return s.seeded > rev }

func (s *src) RowsSince(rev uint64) []string {
	ch, err := s.ChangesSince(rev)
	if err != nil {
		return s.Rows()
	}
	var rows []string
	for _, r := range ch.Rows {
		rows = append(rows, r.Text)
	}
	return rows
}

// pattern compiles a wait's spec as the engine does.
func pattern(t testing.TB, spec tools.WaitSpec) Pattern {
	t.Helper()
	if spec.Wait == tools.WaitRegex {
		return Pattern{Re: regexp.MustCompile("(?m)" + spec.Pattern)}
	}
	return Pattern{Text: spec.Text}
}

// fullMatch is the search the incremental scan replaces: the whole text
// since the baseline, echoes masked, searched at once.
func fullMatch(s *src, p Pattern, baseline uint64) (bool, string) {
	txt, err := s.TextSince(baseline)
	if err != nil {
		return false, ""
	}
	start, _, _ := s.TextStart(baseline)
	ins, _ := s.InputsAfter(baseline, 0)
	at := make([]int, len(ins))
	for i, in := range ins {
		before, _, _ := s.AppendTextRange(nil, start, in.At, true)
		at[i] = len(before)
	}
	return Search(p, []byte(MaskEcho(txt, ins, at)))
}

type scanStep struct {
	input string // recorded as sent before out
	out   string // pane output
	match bool   // the wait holds after this step
}

func TestTextScanAcrossChunks(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		spec  tools.WaitSpec
		steps []scanStep
		want  string
	}{
		{"text split in two", tools.WaitSpec{Wait: tools.WaitText, Text: "FLOOD-END"}, []scanStep{
			{out: "lots of output\r\nFLO"}, {out: "OD-E"}, {out: "ND\r\n", match: true}}, "FLOOD-END"},
		{"text split byte by byte", tools.WaitSpec{Wait: tools.WaitText, Text: "ab"}, []scanStep{
			{out: "a"}, {out: "\x1b[31m"}, {out: "b", match: true}}, "ab"},
		{"escape between the halves", tools.WaitSpec{Wait: tools.WaitText, Text: "READY"}, []scanStep{
			{out: "REA\x1b["}, {out: "1mDY", match: true}}, "READY"},
		{"multi-byte rune split", tools.WaitSpec{Wait: tools.WaitText, Text: "日本"}, []scanStep{
			{out: "\xe6\x97"}, {out: "\xa5\xe6\x9c"}, {out: "\xac", match: true}}, "日本"},
		{"line regex split", tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `^ok +pkg [0-9.]+s$`}, []scanStep{
			{out: "compiling\r\nok "}, {out: " pkg 0."}, {out: "12s\r\n", match: true}}, "ok  pkg 0.12s"},
		{"$ at the end of the text so far", tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `^\$ $`}, []scanStep{
			{out: "done\r\n"}, {out: "$ ", match: true}}, "$ "},
		{"^ needs a line start", tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `^DONE`}, []scanStep{
			{out: "NOT "}, {out: "DONE"}, {out: "\r\nDONE", match: true}}, "DONE"},
		{"regex across lines", tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `BEGIN\nEND`}, []scanStep{
			{out: "BEGIN\r"}, {out: "\nEN"}, {out: "D", match: true}}, "BEGIN\nEND"},
		{"(?s) regex across many turns", tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `(?s)start.*stop`}, []scanStep{
			{out: "start\r\n"}, {out: "middle\r\n"}, {out: "more\r\nst"}, {out: "op", match: true}}, "start\nmiddle\nmore\nstop"},
		{"echo split, output later", tools.WaitSpec{Wait: tools.WaitText, Text: "READY"}, []scanStep{
			{out: "$ "}, {input: "echo READY\r", out: "ec"}, {out: "ho RE"}, {out: "ADY\r\n"}, {out: "REA"}, {out: "DY\r\n", match: true}}, "READY"},
		{"echo wrapped and split", tools.WaitSpec{Wait: tools.WaitText, Text: "FLOOD-DONE"}, []scanStep{
			{out: "$ "}, {input: "head; echo FLOOD-DONE\r", out: "head; echo FLO"}, {out: "OD-\r"}, {out: "\nDONE\r\n"},
			{out: "x\r\nFLOOD-DONE\r\n", match: true}}, "FLOOD-DONE"},
		{"echo of a regex match split", tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `^READY$`}, []scanStep{
			{input: "READY\r", out: "REA"}, {out: "DY\r\n"}, {out: "READ"}, {out: "Y", match: true}}, "READY"},
		{"input sent while waiting", tools.WaitSpec{Wait: tools.WaitText, Text: "go"}, []scanStep{
			{out: "$ "}, {input: "go\r", out: "g"}, {out: "o\r\n"}, {out: "go", match: true}}, "go"},
		{"two inputs, echoes in pieces", tools.WaitSpec{Wait: tools.WaitText, Text: "B"}, []scanStep{
			{input: "A", out: "A"}, {input: "B", out: ""}, {out: "B"}, {out: "\r\nB", match: true}}, "B"},
		// CONTRACT §18: output that merely holds the typed text is no echo.
		{"not echoed (stty -echo), printed back after", tools.WaitSpec{Wait: tools.WaitText, Text: "AFTER-go42"}, []scanStep{
			{input: "go42", out: ""}, {out: "AFTER-go"}, {out: "42\r\n", match: true}}, "AFTER-go42"},
		{"not echoed, the typed text inside output", tools.WaitSpec{Wait: tools.WaitText, Text: "go42"}, []scanStep{
			{out: "> "}, {input: "go42\r", out: "AFTER-go4"}, {out: "2\r\n", match: true}}, "go42"},
		{"echoed, then printed back", tools.WaitSpec{Wait: tools.WaitText, Text: "go42"}, []scanStep{
			{input: "go42\r", out: "go"}, {out: "42\r\n"}, {out: "go42\r\n", match: true}}, "go42"},
		{"line editor redraws the prompt and line", tools.WaitSpec{Wait: tools.WaitText, Text: "hello"}, []scanStep{
			{out: "user@host:~$ "}, {input: "echo hello\r", out: "e"}, {out: "\r\x1b[Kuser@host:~$ echo hello\r\n"}, {out: "hello\r\n", match: true}}, "hello"},
		{"echo after other output is not at the input position", tools.WaitSpec{Wait: tools.WaitText, Text: "READY"}, []scanStep{
			{out: "$ "}, {input: "READY", out: "progress 10%\r\n"}, {out: "READY", match: true}}, "READY"},
		{"multi-line input: later lines after the program's output", tools.WaitSpec{Wait: tools.WaitText, Text: "two"}, []scanStep{
			{out: "$ "}, {input: "echo one\necho two\n", out: "echo one\r\none\r\n$ "}, {out: "echo two\r\n"}, {out: "two\r\n", match: true}}, "two"},
		{"multi-line input never echoed", tools.WaitSpec{Wait: tools.WaitText, Text: "b2"}, []scanStep{
			{input: "a1\nb2\n", out: "got a1\r\n"}, {out: "b2", match: true}}, "b2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := newSrc(t)
			c := pattern(t, tt.spec)
			baseline := n.Revision()
			scan := New(c, baseline)
			var got string
			for i, st := range tt.steps {
				if st.input != "" {
					n.typed(st.input)
				}
				// Through the emulator, so the cursor's row shows the
				// prompt an input follows.
				if err := n.Write([]byte(st.out)); err != nil {
					t.Fatal(err)
				}
				ok, m := scan.Match(n, nil)
				if ok != st.match {
					txt, _ := n.TextSince(baseline)
					t.Fatalf("step %d (%q): matched %v (%q), want %v; text so far %q", i, st.out, ok, m, st.match, txt)
				}
				if fok, _ := fullMatch(n, c, baseline); fok != ok {
					t.Fatalf("step %d: the incremental scan says %v, a search of the whole text %v", i, ok, fok)
				}
				got = m
			}
			if got != tt.want {
				t.Fatalf("match %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTextScanMatchesWholeText cuts random output at random places and
// checks after every piece that the incremental scan agrees with a
// search of the whole text since the baseline, for text waits and for
// line-local and multi-line regexes.
func TestTextScanMatchesWholeText(t *testing.T) {
	t.Parallel()
	words := []string{"ok", " ", "  ", "pkg", "FAIL", "READY", "RE", "ADY", "\r\n", "\n", "\r", "x", "日本", "\x1b[1m",
		"\x1b]0;title\x07", "\t", "0.1s", "DONE", "start", "stop", "\xff"}
	specs := []tools.WaitSpec{
		{Wait: tools.WaitText, Text: "READY"},
		{Wait: tools.WaitText, Text: "ok pkg"},
		{Wait: tools.WaitText, Text: "x\nx"},
		{Wait: tools.WaitRegex, Pattern: `^(ok|FAIL)\s+pkg`},
		{Wait: tools.WaitRegex, Pattern: `READY$`},
		{Wait: tools.WaitRegex, Pattern: `^DONE$`},
		{Wait: tools.WaitRegex, Pattern: `\bRE\b`},
		{Wait: tools.WaitRegex, Pattern: `start[^\n]*stop`},
		{Wait: tools.WaitRegex, Pattern: `(?s)start.*stop`},
		{Wait: tools.WaitRegex, Pattern: `DONE\n+x`},
		{Wait: tools.WaitRegex, Pattern: `日本{2}`},
		{Wait: tools.WaitRegex, Pattern: `^(ok|FAIL) +pkg$`},
		{Wait: tools.WaitRegex, Pattern: `(?s)DONE.*RE`},
		{Wait: tools.WaitRegex, Pattern: `x(ok)?\s*READY`},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	n := newSrc(t)
	for trial := range 3000 {
		spec := specs[trial%len(specs)]
		c := pattern(t, spec)
		n.LogText([]byte("\r\n")) // a fresh line for each trial
		baseline := n.Revision()
		scan := New(c, baseline)
		var out []byte
		for range 3 + rng.IntN(40) {
			out = append(out, words[rng.IntN(len(words))]...)
		}
		for len(out) > 0 {
			k := min(len(out), 1+rng.IntN(8))
			n.LogText(out[:k])
			out = out[k:]
			ok, m := scan.Match(n, nil)
			fok, fm := fullMatch(n, c, baseline)
			if ok != fok || (ok && m != fm) {
				txt, _ := n.TextSince(baseline)
				t.Fatalf("trial %d %+v: incremental %v %q, whole text %v %q; text %q", trial, spec, ok, m, fok, fm, txt)
			}
			if ok {
				break
			}
		}
	}
}

// Echoes cut at random places are masked as a search of the whole text
// masks them: the wait never matches the echo, and matches the output.
func TestTextScanEchoAcrossChunks(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	n := newSrc(t)
	for trial := range 2000 {
		n.LogText([]byte("\r\n"))
		c := pattern(t, tools.WaitSpec{Wait: tools.WaitText, Text: "READY"})
		baseline := n.Revision()
		scan := New(c, baseline)
		cmd := "sleep 1; echo READY"
		n.LogText([]byte("$ "))
		n.typed(cmd + "\r")
		// The line editor's echo, wrapped at a random column, then noise,
		// then the output.
		echo := cmd
		if w := rng.IntN(len(cmd) + 4); w > 0 && w < len(cmd) {
			echo = cmd[:w] + strings.Repeat(" ", rng.IntN(3)) + "\r\n" + cmd[w:]
		}
		stream := echo + "\r\n" + strings.Repeat("noise\r\n", rng.IntN(3))
		echoEnd := len(stream)
		stream += "READY\r\n"
		for pos := 0; pos < len(stream); {
			k := min(len(stream)-pos, 1+rng.IntN(6))
			n.LogText([]byte(stream[pos : pos+k]))
			pos += k
			ok, _ := scan.Match(n, nil)
			if ok != (pos >= echoEnd+len("READY")) {
				txt, _ := n.TextSince(baseline)
				t.Fatalf("trial %d after %d of %d bytes: matched %v; text %q", trial, pos, len(stream), ok, txt)
			}
			if ok {
				break
			}
		}
	}
}

func TestLineLocal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		pattern string
		local   bool
	}{
		{`^(ok|FAIL)`, true}, {`READY$`, true}, {`a.b`, true}, {`[a-z]+`, true}, {`\bx\b`, true}, {`\d+ms`, true},
		{`(?s)a.b`, false}, {`a\nb`, false}, {`\s+`, false}, {`[^x]`, false}, {`\Astart`, false}, {`end\z`, false},
		{`(?-m)^x`, false}, {`[\n]`, false}, {`\W`, false},
	} {
		re := regexp.MustCompile("(?m)" + tt.pattern)
		if got := lineLocal(re.String()); got != tt.local {
			t.Errorf("lineLocal(%q) = %v, want %v", tt.pattern, got, tt.local)
		}
	}
}

func TestRequiredLiteral(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ pattern, lit string }{
		{`^(ok|FAIL) +never-3$`, "never-3"}, {`error: \d+`, "error: "}, {`(ab)+c`, "ab"}, {`x(abc)?`, "x"},
		{`a|b`, ""}, {`(?i)ready`, ""}, {`[0-9]+`, ""}, {`READY`, "READY"}, {`(?:go){2,}!`, "go"},
	} {
		re := regexp.MustCompile("(?m)" + tt.pattern)
		if got := requiredLiteral(re.String()); got != tt.lit {
			t.Errorf("requiredLiteral(%q) = %q, want %q", tt.pattern, got, tt.lit)
		}
	}
}

// The scan reads only new text: after a long output, a turn appends what
// came since the last one and keeps no more than a line's worth.
func TestTextScanKeepsLittle(t *testing.T) {
	t.Parallel()
	n := newSrc(t)
	scan := New(pattern(t, tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `^never$`}), n.Revision())
	line := strings.Repeat("x", 75) + "\r\n"
	for range 4000 { // 300 KB
		n.LogText([]byte(line))
		if ok, _ := scan.Match(n, nil); ok {
			t.Fatal("matched")
		}
	}
	if scan.Buffered() > 128<<10 {
		t.Fatalf("the scan keeps %d bytes of text", scan.Buffered())
	}
}

// BenchmarkTextScanFlood is the waits' share of a flood: 4 MiB of base64
// lines logged in 16 KiB pieces with 1 or 8 waits (text and line regexes
// for strings that never come) taking a turn after each piece, against
// the logging alone (0). MB/s is of flood text.
func BenchmarkTextScanFlood(b *testing.B) {
	line := []byte(strings.Repeat("QUJD", 19) + "\r\n")
	piece := bytes.Repeat(line, (16<<10)/len(line))
	for _, waits := range []int{0, 1, 8} {
		b.Run(fmt.Sprintf("waits=%d", waits), func(b *testing.B) {
			s := screen.New(80, 24)
			defer s.Close()
			n := &src{Screen: s}
			b.SetBytes(4 << 20)
			cpu0 := selfCPU()
			defer func() { b.ReportMetric(float64(selfCPU()-cpu0)/1e6/float64(b.N), "cpu-ms/op") }()
			for range b.N {
				base := s.Revision()
				var scans []*Scan
				for k := range waits {
					scans = append(scans, New(pattern(b, floodWaitSpec(k)), base))
				}
				for sent := 0; sent < 4<<20; sent += len(piece) {
					s.LogText(piece)
					for _, sc := range scans {
						if ok, _ := sc.Match(n, nil); ok {
							b.Fatal("matched")
						}
					}
				}
			}
		})
	}
}

// floodWaitSpec is the k-th wait kept active during a flood (as the
// engine's flood benchmark has them): waits for strings that never come.
func floodWaitSpec(k int) tools.WaitSpec {
	if k%4 == 3 {
		return tools.WaitSpec{Wait: tools.WaitRegex, Pattern: fmt.Sprintf(`^(ok|FAIL) +never-%d$`, k)}
	}
	return tools.WaitSpec{Wait: tools.WaitText, Text: fmt.Sprintf("never-appears-%d", k)}
}

// selfCPU is the process's user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestWholeMaxIsTheTextLog(t *testing.T) {
	t.Parallel()
	if wholeMax != screen.DefaultTextLog {
		t.Fatalf("wholeMax %d, the screen's text log %d", wholeMax, screen.DefaultTextLog)
	}
}

// FuzzTextScan cuts arbitrary pane output at arbitrary places: the
// incremental scan must agree with a search of the whole text after every
// piece, for a text wait, a line regex and a multi-line regex; in a second
// round the waited-for text is also typed as input before one of the
// pieces (its echo may or may not follow).
func FuzzTextScan(f *testing.F) {
	f.Add([]byte("ok  pkg\r\nREADY\r\n"), []byte{3, 1, 7}, "READY")
	f.Add([]byte("\x1b[31mRE\x1b[0mADY\xff\xfe日本\r\nDONE"), []byte{1, 2, 3, 4, 5}, "DONE")
	f.Add([]byte("start\r\n\x1b]0;t\x07stop"), []byte{9}, "stop")
	f.Fuzz(func(t *testing.T, out, cuts []byte, text string) {
		if text == "" || !utf8.ValidString(text) || len(out) > 4096 || len(cuts) > 64 {
			return
		}
		specs := []tools.WaitSpec{
			{Wait: tools.WaitText, Text: text},
			{Wait: tools.WaitRegex, Pattern: "^" + regexp.QuoteMeta(text) + "$"},
			{Wait: tools.WaitRegex, Pattern: `(?s)start.*` + regexp.QuoteMeta(text)},
		}
		for round, spec := range append(specs, specs...) {
			n := newSrc(t)
			c := pattern(t, spec)
			baseline := n.Revision()
			scan := New(c, baseline)
			typeAt := -1
			if round >= len(specs) {
				typeAt = len(out) % (len(cuts) + 1)
			}
			rest, k := out, 0
			for len(rest) > 0 {
				if k == typeAt {
					n.typed(text)
				}
				size := len(rest)
				if k < len(cuts) {
					size = min(len(rest), int(cuts[k])+1)
					k++
				}
				n.LogText(rest[:size])
				rest = rest[size:]
				ok, m := scan.Match(n, nil)
				fok, fm := fullMatch(n, c, baseline)
				if ok != fok || (ok && m != fm) {
					t.Fatalf("%+v: incremental %v %q, whole text %v %q", spec, ok, m, fok, fm)
				}
				if ok {
					break
				}
			}
		}
	})
}
