package orchestrator

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// scanNode is a node with a mirror and nothing else: enough for a wait's
// text scan.
func scanNode(t *testing.T) *node {
	t.Helper()
	s := screen.New(80, 24)
	t.Cleanup(func() { s.Close() })
	return &node{scr: s}
}

func mustCompile(t *testing.T, spec tools.WaitSpec) *compiled {
	t.Helper()
	c, err := compileWait(spec)
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

// fullMatch is the search the incremental scan replaces: the whole text
// since the baseline, echoes masked, searched at once.
func fullMatch(n *node, c *compiled, baseline uint64) (bool, string) {
	txt, err := n.scr.TextSince(baseline)
	if err != nil {
		return false, ""
	}
	txt = maskEcho(txt, n.inputsSince(baseline))
	if c.re != nil {
		if loc := c.re.FindStringIndex(txt); loc != nil {
			return true, txt[loc[0]:loc[1]]
		}
		return false, ""
	}
	return strings.Contains(txt, c.Text), c.Text
}

type scanStep struct {
	input  string // recorded as sent before out
	out    string // pane output
	match  bool   // the wait holds after this step
	detail string
}

func TestTextScanAcrossChunks(t *testing.T) {
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
			{input: "echo READY\r", out: "$ ec"}, {out: "ho RE"}, {out: "ADY\r\n"}, {out: "REA"}, {out: "DY\r\n", match: true}}, "READY"},
		{"echo wrapped and split", tools.WaitSpec{Wait: tools.WaitText, Text: "FLOOD-DONE"}, []scanStep{
			{input: "head; echo FLOOD-DONE\r", out: "$ head; echo FLO"}, {out: "OD-\r"}, {out: "\nDONE\r\n"},
			{out: "x\r\nFLOOD-DONE\r\n", match: true}}, "FLOOD-DONE"},
		{"echo of a regex match split", tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `^READY$`}, []scanStep{
			{input: "READY\r", out: "REA"}, {out: "DY\r\n"}, {out: "READ"}, {out: "Y", match: true}}, "READY"},
		{"input sent while waiting", tools.WaitSpec{Wait: tools.WaitText, Text: "go"}, []scanStep{
			{out: "$ "}, {input: "go\r", out: "g"}, {out: "o\r\n"}, {out: "go", match: true}}, "go"},
		{"two inputs, echoes in pieces", tools.WaitSpec{Wait: tools.WaitText, Text: "B"}, []scanStep{
			{input: "A", out: "A"}, {input: "B", out: ""}, {out: "B"}, {out: "\r\nB", match: true}}, "B"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := scanNode(t)
			c := mustCompile(t, tt.spec)
			baseline := n.scr.Revision()
			scan := newTextScan(c, baseline)
			var got string
			for i, st := range tt.steps {
				if st.input != "" {
					n.recordInput(n.scr.Revision(), st.input)
				}
				n.scr.LogText([]byte(st.out))
				ok, m := scan.match(n, nil)
				if ok != st.match {
					txt, _ := n.scr.TextSince(baseline)
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
	n := scanNode(t)
	for trial := range 3000 {
		spec := specs[trial%len(specs)]
		c := mustCompile(t, spec)
		n.scr.LogText([]byte("\r\n")) // a fresh line for each trial
		baseline := n.scr.Revision()
		scan := newTextScan(c, baseline)
		var out []byte
		for range 3 + rng.IntN(40) {
			out = append(out, words[rng.IntN(len(words))]...)
		}
		for len(out) > 0 {
			k := min(len(out), 1+rng.IntN(8))
			n.scr.LogText(out[:k])
			out = out[k:]
			ok, m := scan.match(n, nil)
			fok, fm := fullMatch(n, c, baseline)
			if ok != fok || (ok && m != fm) {
				txt, _ := n.scr.TextSince(baseline)
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
	rng := rand.New(rand.NewPCG(5, 6))
	n := scanNode(t)
	for trial := range 2000 {
		n.scr.LogText([]byte("\r\n"))
		c := mustCompile(t, tools.WaitSpec{Wait: tools.WaitText, Text: "READY"})
		baseline := n.scr.Revision()
		scan := newTextScan(c, baseline)
		cmd := "sleep 1; echo READY"
		n.recordInput(baseline, cmd+"\r")
		// The line editor's echo, wrapped at a random column, then noise,
		// then the output.
		echo := cmd
		if w := rng.IntN(len(cmd) + 4); w > 0 && w < len(cmd) {
			echo = cmd[:w] + strings.Repeat(" ", rng.IntN(3)) + "\r\n" + cmd[w:]
		}
		stream := "$ " + echo + "\r\n" + strings.Repeat("noise\r\n", rng.IntN(3))
		echoEnd := len(stream)
		stream += "READY\r\n"
		for pos := 0; pos < len(stream); {
			k := min(len(stream)-pos, 1+rng.IntN(6))
			n.scr.LogText([]byte(stream[pos : pos+k]))
			pos += k
			ok, _ := scan.match(n, nil)
			if ok != (pos >= echoEnd+len("READY")) {
				txt, _ := n.scr.TextSince(baseline)
				t.Fatalf("trial %d after %d of %d bytes: matched %v; text %q", trial, pos, len(stream), ok, txt)
			}
			if ok {
				break
			}
		}
	}
}

func TestLineLocal(t *testing.T) {
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
	n := scanNode(t)
	scan := newTextScan(mustCompile(t, tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `^never$`}), n.scr.Revision())
	line := strings.Repeat("x", 75) + "\r\n"
	for range 4000 { // 300 KB
		n.scr.LogText([]byte(line))
		if ok, _ := scan.match(n, nil); ok {
			t.Fatal("matched")
		}
	}
	if len(scan.buf) > 128<<10 {
		t.Fatalf("the scan keeps %d bytes of text", len(scan.buf))
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
			n := &node{scr: s}
			b.SetBytes(4 << 20)
			cpu0 := selfCPU()
			defer func() { b.ReportMetric(float64(selfCPU()-cpu0)/1e6/float64(b.N), "cpu-ms/op") }()
			for range b.N {
				base := s.Revision()
				var scans []*textScan
				for k := range waits {
					spec := floodWaitSpec(k, &base)
					c, err := compileWait(spec)
					if err != nil {
						b.Fatal(err)
					}
					scans = append(scans, newTextScan(&c, base))
				}
				for sent := 0; sent < 4<<20; sent += len(piece) {
					s.LogText(piece)
					for _, sc := range scans {
						if ok, _ := sc.match(n, nil); ok {
							b.Fatal("matched")
						}
					}
				}
			}
		})
	}
}

// FuzzTextScan cuts arbitrary pane output at arbitrary places: the
// incremental scan must agree with a search of the whole text after every
// piece, for a text wait, a line regex and a multi-line regex.
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
		for _, spec := range specs {
			n := scanNode(t)
			c := mustCompile(t, spec)
			baseline := n.scr.Revision()
			scan := newTextScan(c, baseline)
			rest, k := out, 0
			for len(rest) > 0 {
				size := len(rest)
				if k < len(cuts) {
					size = min(len(rest), int(cuts[k])+1)
					k++
				}
				n.scr.LogText(rest[:size])
				rest = rest[size:]
				ok, m := scan.match(n, nil)
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
