package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/termsprawl/termsprawl/internal/testenv"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var epoch = time.Date(2026, 12, 1, 10, 15, 0, 0, time.UTC)

func startRec(t *testing.T, m Meta) (*Recorder, string, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: epoch}
	if m.Columns == 0 {
		m.Columns, m.Rows = 20, 5
	}
	if m.Node == "" {
		m.Node = "build"
	}
	m.Start = epoch
	dir := filepath.Join(t.TempDir(), "traces", DirName(m.Node, epoch))
	r, err := start(dir, m, clk.now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir, clk
}

// castLines parses a cast file: the header and the events, each checked
// against asciicast v2 with encoding/json.
func castLines(t *testing.T, path string) (map[string]any, [][3]any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(raw) {
		t.Fatalf("%s is not valid UTF-8", path)
	}
	if !bytes.HasSuffix(raw, []byte("\n")) {
		t.Fatalf("%s does not end with a newline", path)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	var hdr map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &hdr); err != nil {
		t.Fatalf("header %q: %v", lines[0], err)
	}
	for _, k := range []string{"version", "width", "height", "timestamp"} {
		if _, ok := hdr[k]; !ok {
			t.Fatalf("header %q has no %q", lines[0], k)
		}
	}
	if hdr["version"] != float64(2) {
		t.Fatalf("header version %v", hdr["version"])
	}
	var evs [][3]any
	last := -1.0
	for i, line := range lines[1:] {
		var ev []any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %d %q: %v", i+2, line, err)
		}
		if len(ev) != 3 {
			t.Fatalf("line %d %q: %d elements", i+2, line, len(ev))
		}
		ts, ok1 := ev[0].(float64)
		code, ok2 := ev[1].(string)
		data, ok3 := ev[2].(string)
		if !ok1 || !ok2 || !ok3 || !strings.Contains("oirm", code) || len(code) != 1 {
			t.Fatalf("line %d %q is not [time, code, data]", i+2, line)
		}
		if ts < last {
			t.Fatalf("line %d: time %v before %v", i+2, ts, last)
		}
		last = ts
		if code == "r" {
			var w, h int
			if n, _ := fmt.Sscanf(data, "%dx%d", &w, &h); n != 2 || fmt.Sprintf("%dx%d", w, h) != data {
				t.Fatalf("line %d: resize %q", i+2, data)
			}
		}
		evs = append(evs, [3]any{ts, code, data})
	}
	return hdr, evs
}

func eventLines(t *testing.T, dir string) []Event {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []Event
	for i, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		var e Event
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("%s line %d %q: %v", EventsFile, i+1, line, err)
		}
		if e.Type == "" {
			t.Fatalf("%s line %d has no type", EventsFile, i+1)
		}
		out = append(out, e)
	}
	return out
}

func outputOf(evs [][3]any) string {
	var b strings.Builder
	for _, e := range evs {
		if e[1] == "o" {
			b.WriteString(e[2].(string))
		}
	}
	return b.String()
}

func TestCastIsAsciicastV2(t *testing.T) {
	r, dir, clk := startRec(t, Meta{Node: "build", Command: []string{"make", "-j4"}, Columns: 80, Rows: 24, Version: "1.2.3"})
	r.Output([]byte("\x1b[1mhello\x1b[0m \"quoted\" back\\slash\ttab\r\n"))
	clk.add(1500 * time.Millisecond)
	r.Resize(100, 30)
	clk.add(250 * time.Millisecond)
	r.Mark("after resize")
	r.Output([]byte("bell\x07 nul\x00 del\x7f"))
	clk.add(time.Second)
	r.Exit(0, "", nil)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	hdr, evs := castLines(t, filepath.Join(dir, CastFile))
	if hdr["width"] != float64(80) || hdr["height"] != float64(24) || hdr["timestamp"] != float64(epoch.Unix()) || hdr["command"] != "make -j4" {
		t.Errorf("header %v", hdr)
	}
	want := [][3]any{
		{0.0, "o", "\x1b[1mhello\x1b[0m \"quoted\" back\\slash\ttab\r\n"},
		{1.5, "r", "100x30"},
		{1.75, "m", "after resize"},
		{1.75, "o", "bell\x07 nul\x00 del\x7f"},
	}
	if fmt.Sprint(evs) != fmt.Sprint(want) {
		t.Errorf("events\n got %q\nwant %q", evs, want)
	}
	got := eventLines(t, dir)
	var types []string
	for _, e := range got {
		types = append(types, fmt.Sprintf("%d:%s", e.TMS, e.Type))
	}
	if strings.Join(types, " ") != "0:start 1500:resize 1750:marker 2750:exit" {
		t.Errorf("events.jsonl: %v", types)
	}
	m, err := readMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Node != "build" || m.Columns != 80 || m.Rows != 24 || !m.Start.Equal(epoch) || !m.End.Equal(epoch.Add(2750*time.Millisecond)) ||
		m.ExitCode == nil || *m.ExitCode != 0 || m.Version != "1.2.3" || m.Format != FormatVersion || strings.Join(m.Command, " ") != "make -j4" {
		t.Errorf("meta %+v", m)
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v %v", st.Mode(), err)
	}
	for _, f := range []string{MetaFile, CastFile, EventsFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v %v", f, st.Mode(), err)
		}
	}
}

// asciinemaCat runs `asciinema cat` on path. asciinema 2.2 opens
// /dev/tty, so it runs under script(1), which gives it a terminal.
func asciinemaCat(t *testing.T, path string) (string, error) {
	t.Helper()
	return testenv.AsciinemaCat(t, path)
}

// TestAsciinemaCatAcceptsCast runs the real asciinema on a recording.
func TestAsciinemaCatAcceptsCast(t *testing.T) {
	t.Parallel()
	r, dir, clk := startRec(t, Meta{Columns: 40, Rows: 10})
	r.Output([]byte("first line\r\n\x1b[31mred\x1b[0m é 漢字 🙂 \"q\" \\\r\n"))
	clk.add(100 * time.Millisecond)
	r.Resize(50, 12)
	r.Mark("half way")
	r.Input(InputPaste, 10, nil)
	r.Output([]byte("\xe2\x82"))
	r.Output([]byte("\xac euro\r\nbad \xff byte\r\n"))
	r.Exit(0, "", nil)
	r.Close()
	out, err := asciinemaCat(t, filepath.Join(dir, CastFile))
	if err != nil {
		t.Fatalf("asciinema cat: %v\n%s", err, out)
	}
	for _, want := range []string{"first line", "red", "漢字", "€ euro", "bad \uFFFD byte", `"q" \`} {
		if !strings.Contains(out, want) {
			t.Errorf("asciinema cat output lacks %q:\n%q", want, out)
		}
	}
	// The check can fail: a cast with a line cut short is refused.
	bad := filepath.Join(t.TempDir(), "bad.cast")
	raw, _ := os.ReadFile(filepath.Join(dir, CastFile))
	os.WriteFile(bad, append(raw, `[9.0, "o", "cut`+"\n"...), 0o600)
	if out, err := asciinemaCat(t, bad); err == nil {
		t.Errorf("asciinema cat accepted a broken cast:\n%s", out)
	}
}

func TestOutputSplitUTF8(t *testing.T) {
	t.Parallel()
	text := "aé漢🙂z"
	for cut1 := 0; cut1 <= len(text); cut1++ {
		for cut2 := cut1; cut2 <= len(text); cut2++ {
			t.Run(fmt.Sprintf("%d-%d", cut1, cut2), func(t *testing.T) {
				r, dir, _ := startRec(t, Meta{})
				for _, p := range []string{text[:cut1], text[cut1:cut2], text[cut2:]} {
					r.Output([]byte(p))
				}
				r.Close()
				_, evs := castLines(t, filepath.Join(dir, CastFile))
				if got := outputOf(evs); got != text {
					t.Fatalf("recorded %q, want %q", got, text)
				}
			})
		}
	}
	cases := []struct {
		name  string
		parts []string
		want  string
	}{
		{"invalid byte", []string{"a\xffb"}, "a\uFFFDb"},
		{"lone continuation", []string{"a\x80", "b"}, "a\uFFFDb"},
		{"lead then ASCII", []string{"a\xe2", "b"}, "a\uFFFDb"},
		{"lead then lead", []string{"\xe2\x82", "\xe2\x82\xac"}, "\uFFFD\uFFFD€"},
		{"incomplete at the end", []string{"ok\xe2\x82"}, "ok\uFFFD\uFFFD"},
		{"one byte at a time", []string{"\xf0", "\x9f", "\x99", "\x82", "!"}, "🙂!"},
		{"surrogate bytes", []string{"\xed\xa0\x80"}, "\uFFFD\uFFFD\uFFFD"},
		{"overlong", []string{"\xc0\xaf"}, "\uFFFD\uFFFD"},
		{"controls", []string{"\x1b[0m\x00\x1f\"\\"}, "\x1b[0m\x00\x1f\"\\"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, dir, _ := startRec(t, Meta{})
			for _, p := range tc.parts {
				r.Output([]byte(p))
			}
			r.Close()
			_, evs := castLines(t, filepath.Join(dir, CastFile))
			if got := outputOf(evs); got != tc.want {
				t.Fatalf("recorded %q, want %q", got, tc.want)
			}
		})
	}
}

// A grapheme cluster cut across two outputs is joined in one event (the
// emulator only joins a cluster written at once).
func TestOutputKeepsClustersTogether(t *testing.T) {
	t.Parallel()
	r, dir, _ := startRec(t, Meta{})
	r.Output([]byte("cafe"))
	r.Output([]byte("\u0301 ok\r\n👩"))
	r.Output([]byte("\u200d💻\r\n"))
	r.Close()
	_, evs := castLines(t, filepath.Join(dir, CastFile))
	for _, e := range evs {
		d := e[2].(string)
		if strings.HasSuffix(d, "e") || strings.HasSuffix(d, "👩") {
			t.Errorf("event %q ends where the next output may extend its last character", d)
		}
	}
	if got := outputOf(evs); got != "cafe\u0301 ok\r\n👩\u200d💻\r\n" {
		t.Errorf("recorded %q", got)
	}
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	s, _, _ := tr.FrameAt(nil, "")
	if s.Lines[0] != "cafe\u0301 ok" {
		t.Errorf("row 0 %q", s.Lines[0])
	}
}

// A held-back character is written on its own once output stays quiet.
func TestHeldCharacterIsFlushedWhenQuiet(t *testing.T) {
	t.Parallel()
	r, err := Start(filepath.Join(t.TempDir(), "rec"), Meta{Node: "n", Columns: 10, Rows: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Output([]byte("$ "))
	var raw []byte
	if !testenv.Until(5*time.Second, func() bool {
		raw, _ = os.ReadFile(filepath.Join(r.Dir(), CastFile))
		if bytes.Contains(raw, []byte(`"$ "`)) || bytes.Contains(raw, []byte(`" "]`)) {
			return true
		}
		return false
	}) {
		t.Fatalf("the prompt's last character was not written: %q", raw)
	}
}

func TestPasteTextAppearsNowhere(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-correct-horse-battery"
	r, dir, clk := startRec(t, Meta{})
	r.Output([]byte("password: "))
	r.Input(InputPaste, len(secret), nil)
	r.Input(InputType, len(secret), []string{secret})
	r.Input(InputSubmit, len(secret)+1, []string{secret, "Enter"})
	r.Input(InputRaw, 3, []string{secret})
	r.Input(InputPress, 1, []string{"h", "u", "n", "t", "e", "r", "2", secret, "C-c", "Enter", "M-S-Up", "C-hunter"})
	r.Input("bogus-"+secret, 1, nil)
	clk.add(time.Second)
	r.Exit(1, "", &Crash{ExitCode: intp(1), AfterMS: 1000, LastInput: &LastInput{Kind: InputPaste, Summary: fmt.Sprintf("paste of %d bytes", len(secret))}, ScreenTail: []string{"password: "}})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	var found []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, needle := range []string{secret, "hunter", "horse", "battery", "bogus"} {
			if bytes.Contains(raw, []byte(needle)) {
				found = append(found, fmt.Sprintf("%s holds %q", filepath.Base(p), needle))
			}
		}
		return nil
	})
	if len(found) > 0 {
		t.Fatalf("input text was recorded: %v", found)
	}
	var keys []string
	for _, e := range eventLines(t, dir) {
		if e.Type == "input" {
			if e.Bytes == nil {
				t.Errorf("input %s without a size", e.Kind)
			}
			keys = append(keys, fmt.Sprintf("%s%v", e.Kind, e.Keys))
		}
	}
	want := "paste[] type[] submit[] raw[] press[char char char char char char char text C-c Enter M-S-Up text] other[]"
	if strings.Join(keys, " ") != want {
		t.Errorf("inputs\n got %s\nwant %s", strings.Join(keys, " "), want)
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := Start(filepath.Join(dir, "a"), Meta{Columns: 0, Rows: 24}); tools.KindOf(err) != tools.KindUsage {
		t.Errorf("size 0: %v", err)
	}
	r, err := Start(filepath.Join(dir, "b"), Meta{Columns: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := Start(filepath.Join(dir, "b"), Meta{Columns: 80, Rows: 24}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("existing directory: %v", err)
	}
}

func TestDirName(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 11, 15, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct{ node, want string }{
		{"build", "build-20261201T101500Z"},
		{"t1", "t1-20261201T101500Z"},
		{"../../etc", "_._.._etc-20261201T101500Z"},
		{".hidden", "_hidden-20261201T101500Z"},
		{"", "node-20261201T101500Z"},
		{"a b/c", "a_b_c-20261201T101500Z"},
	} {
		if got := DirName(tc.node, at); got != tc.want {
			t.Errorf("DirName(%q) = %q, want %q", tc.node, got, tc.want)
		}
	}
}

func TestExitWritesMetaBeforeClose(t *testing.T) {
	r, dir, clk := startRec(t, Meta{})
	clk.add(2 * time.Second)
	r.Exit(139, "SIGSEGV", &Crash{ExitCode: intp(139), Signal: "SIGSEGV", AfterMS: 2000, ScreenTail: []string{"Segmentation fault"}})
	var m Meta
	var err error
	if !testenv.Until(5*time.Second, func() bool {
		m, err = readMeta(dir)
		if err == nil && m.ExitCode != nil {
			if *m.ExitCode != 139 || m.Signal != "SIGSEGV" || m.Crash == nil || m.Crash.ScreenTail[0] != "Segmentation fault" || !m.End.Equal(epoch.Add(2*time.Second)) {
				t.Fatalf("meta after Exit: %+v", m)
			}
			return true
		}
		return false
	}) {
		t.Fatalf("meta.json was not rewritten after Exit: %+v %v", m, err)
	}
	r.Close()
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	o := tr.Overview()
	if o.Exit == nil || *o.Exit.ExitCode != 139 || o.Exit.Signal != "SIGSEGV" || o.Exit.TMS != 2000 || o.Crash == nil || o.Crash.AfterMS != 2000 {
		t.Errorf("overview exit %+v crash %+v", o.Exit, o.Crash)
	}
}

func TestRecorderConcurrentCalls(t *testing.T) {
	t.Parallel()
	r, dir, _ := startRec(t, Meta{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				switch i % 5 {
				case 0:
					r.Mark(fmt.Sprintf("g%d-%d", g, i))
				case 1:
					r.Input(InputType, i, nil)
				case 2:
					r.Resize(20+i%5, 5)
				default:
					r.Output([]byte(fmt.Sprintf("g%d é %d\r\n", g, i)))
				}
			}
		}()
	}
	wg.Wait()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	_, evs := castLines(t, filepath.Join(dir, CastFile))
	if n := strings.Count(outputOf(evs), "\r\n"); n != 4*200 {
		t.Errorf("%d lines of output, want %d", n, 4*200)
	}
	eventLines(t, dir)
}

// A reseed paints the screen it is given, for a replay as for a player.
func TestReseedPaintsTheScreen(t *testing.T) {
	t.Parallel()
	r, dir, clk := startRec(t, Meta{Columns: 12, Rows: 4})
	r.Output([]byte("garbage\r\n\x1b[5;7r\x1b[?6h\x1b[?1049h junk"))
	clk.add(time.Second)
	seed := tools.Screen{Columns: 10, Rows: 3, Cursor: tools.Cursor{X: 3, Y: 1, Visible: false},
		Modes: tools.Modes{AppCursor: true, BracketedPaste: true, Mouse: true}, Title: "vim", Lines: []string{"one", " two  2", "漢字 é"}}
	r.Reseed(seed, "backlog")
	r.Close()
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	s, _, _ := tr.FrameAt(nil, "")
	seed.Revision = s.Revision
	if d := diffScreens(s, seed); d != "" {
		t.Errorf("after the reseed: %s", d)
	}
	var reasons []string
	for _, e := range eventLines(t, dir) {
		if e.Type == "reseed" {
			reasons = append(reasons, e.Reason)
		}
	}
	if fmt.Sprint(reasons) != "[backlog]" {
		t.Errorf("reseed events %v", reasons)
	}
}

func TestResumeAfterRestart(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crashed=%v", crash), func(t *testing.T) {
			r, dir, clk := startRec(t, Meta{Columns: 20, Rows: 4})
			r.Output([]byte("before 1\r\nbefore 2\r\n"))
			clk.add(3 * time.Second)
			r.Mark("before")
			r.Input(InputType, 5, nil)
			r.Close()
			if crash {
				// The orchestrator died mid-write: half lines at the ends.
				appendFile(t, filepath.Join(dir, CastFile), `[3.5, "o", "lost`)
				appendFile(t, filepath.Join(dir, EventsFile), `{"t_ms":3600,"type":"inp`)
			}
			// 60 s later a new orchestrator adopts the node and resumes.
			clk.add(time.Minute)
			seed := tools.Screen{Columns: 20, Rows: 4, Cursor: tools.Cursor{X: 2, Y: 3, Visible: true}, Lines: []string{"adopted", "screen", "", "$"}}
			r2, err := resume(dir, clk.now(), seed, clk.now)
			if err != nil {
				t.Fatal(err)
			}
			clk.add(500 * time.Millisecond)
			r2.Output([]byte(" ls\r\nafter\r\n"))
			r2.Mark("after")
			if err := r2.Close(); err != nil {
				t.Fatal(err)
			}

			_, evs := castLines(t, filepath.Join(dir, CastFile))
			if strings.Contains(outputOf(evs), "lost") {
				t.Errorf("the half line is still there")
			}
			var gaps []Event
			var lastMS int64 = -1
			for _, e := range eventLines(t, dir) {
				if e.TMS < lastMS {
					t.Errorf("events.jsonl goes back in time: %d after %d", e.TMS, lastMS)
				}
				lastMS = e.TMS
				if e.Type == "gap" {
					gaps = append(gaps, e)
				}
			}
			if len(gaps) != 1 || *gaps[0].FromMS != 3000 || *gaps[0].ToMS != 63000 {
				t.Fatalf("gap events %+v", gaps)
			}
			m, _ := readMeta(dir)
			if m.Resumes != 1 || !m.Start.Equal(epoch) || !m.End.Equal(epoch.Add(63500*time.Millisecond)) {
				t.Errorf("meta %+v", m)
			}
			tr, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			o := tr.Overview()
			if o.Truncated || len(o.Gaps) != 1 || o.Gaps[0] != (Gap{FromMS: 3000, ToMS: 63000}) || len(o.Markers) != 2 || o.Markers[1].TMS != 63500 {
				t.Errorf("overview %+v", o)
			}
			at := int64(63000)
			s, _, err := tr.FrameAt(&at, "")
			if err != nil {
				t.Fatal(err)
			}
			seed.Revision = s.Revision
			if d := diffScreens(s, seed); d != "" {
				t.Errorf("the reseeded frame: %s", d)
			}
			s, _, _ = tr.FrameAt(nil, "after")
			if strings.Join(s.Lines, "|") != "|$  ls|after|" {
				t.Errorf("after the resume: %q", s.Lines)
			}
			before := int64(2999)
			if s, _, _ := tr.FrameAt(&before, ""); strings.Join(s.Lines, "|") != "before 1|before 2||" {
				t.Errorf("before the restart: %q", s.Lines)
			}
		})
	}
}

func appendFile(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(s)
	f.Close()
}

func TestResumeErrors(t *testing.T) {
	t.Parallel()
	if _, err := Resume(t.TempDir(), time.Now(), tools.Screen{Columns: 2, Rows: 2}); tools.KindOf(err) != tools.KindUsage {
		t.Errorf("not a recording: %v", err)
	}
}

// TestRecorderStopsWhenDiskFull records onto a 64 KiB tmpfs.
func TestRecorderStopsWhenDiskFull(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root to mount a small tmpfs (mount -t tmpfs -o size=64k)")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt).CombinedOutput(); err != nil {
		skipOrFail(t, "cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	r, err := Start(filepath.Join(mnt, "rec"), Meta{Node: "n", Columns: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 256)
	for i := 0; i < 200; i++ { // 800 KiB: far more than fits
		r.Output(chunk)
	}
	select {
	case <-r.Failed():
	case <-time.After(10 * time.Second):
		t.Fatal("the recorder did not stop on a full disk")
	}
	if err := r.Err(); !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("Err() = %v", err)
	}
	sizes := func() string {
		var s []string
		for _, f := range []string{CastFile, EventsFile} {
			st, _ := os.Stat(filepath.Join(mnt, "rec", f))
			s = append(s, fmt.Sprint(st.Size()))
		}
		return strings.Join(s, " ")
	}
	before := sizes()
	for range 50 {
		r.Output(chunk)
		r.Input(InputType, 3, nil)
		r.Mark("x")
		r.Resize(10, 10)
		r.Exit(1, "", nil)
	}
	// Close ends the writer goroutine: whatever it would write is on disk
	// when Close returns.
	if err := r.Close(); !errors.Is(err, ErrStopped) {
		t.Errorf("Close() = %v", err)
	}
	if after := sizes(); after != before {
		t.Errorf("the stopped recorder still wrote: %s then %s", before, after)
	}
	if err := r.Close(); !errors.Is(err, ErrStopped) {
		t.Errorf("second Close() = %v", err)
	}
	// What was written before the disk filled up is a readable trace.
	tr, err := Open(filepath.Join(mnt, "rec"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, _, err := tr.FrameAt(nil, ""); err != nil {
		t.Errorf("FrameAt: %v", err)
	}
	t.Logf("stopped: %v; overview truncated=%v warnings=%q", r.Err(), tr.Overview().Truncated, tr.Overview().Warnings)
}

// The frame of a reseed replays to the screen it describes, whatever
// came before.
func TestFrameBytes(t *testing.T) {
	t.Parallel()
	for _, s := range []tools.Screen{
		{Columns: 8, Rows: 3, Cursor: tools.Cursor{X: 7, Y: 2, Visible: true}, Lines: []string{"a", "", "12345678"}},
		{Columns: 8, Rows: 3, Cursor: tools.Cursor{Visible: false}, Modes: tools.Modes{AltScreen: true, Mouse: true}, Title: "t", Lines: []string{"", "alt", ""}},
	} {
		scr := screen.New(8, 3)
		scr.Write([]byte("\x1b[2;3r\x1b[?6h\x1b[?1049hxx\x1b[?2004h"))
		scr.Write(frameBytes(s))
		got := scr.Snapshot()
		scr.Close()
		s.Revision = got.Revision
		if d := diffScreens(got, s); d != "" {
			t.Errorf("%+v: %s", s, d)
		}
	}
}

// An input's event is in events.jsonl when Input returns, before the
// writer's next tick and without Close: a paste answered ok:true and then
// a kill -9 within ~100 ms left the paste out of events.jsonl.
func TestInputEventWrittenBeforeInputReturns(t *testing.T) {
	t.Parallel()
	r, dir, _ := startRec(t, Meta{})
	defer r.Close()
	for i, kind := range []string{InputPaste, InputSubmit, InputPress} {
		r.Input(kind, 10+i, []string{"Enter"})
		b, err := os.ReadFile(filepath.Join(dir, EventsFile))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`"kind":%q,"bytes":%d`, kind, 10+i)
		if !strings.Contains(string(b), want) {
			t.Fatalf("after Input(%s) events.jsonl lacks %s:\n%s", kind, want, b)
		}
	}
}
