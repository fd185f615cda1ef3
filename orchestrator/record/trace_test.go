package record

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// knownTrace records "a\r\nb\r\n" at 0 ms, a marker "two rows" at
// 1000 ms, "c" at 2000 ms and exits at 3000 ms.
func knownTrace(t *testing.T) string {
	t.Helper()
	r, dir, clk := startRec(t, Meta{Columns: 10, Rows: 4})
	r.Output([]byte("a\r\nb\r\n"))
	clk.add(time.Second)
	r.Mark("two rows")
	clk.add(time.Second)
	r.Output([]byte("c"))
	r.Input(InputPaste, 12, nil)
	r.Input(InputPaste, 30, nil)
	r.Input(InputPress, 1, []string{"Enter"})
	clk.add(time.Second)
	r.Exit(2, "", nil)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func ms(v int64) *int64 { return &v }

func TestFrameAtAndDiffOfAKnownSequence(t *testing.T) {
	t.Parallel()
	tr, err := Open(knownTrace(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	cases := []struct {
		name      string
		time      *int64
		marker    string
		lines     string
		cursor    tools.Cursor
		shows     int64
		wantEvent uint64
	}{
		{"the start", ms(0), "", "a|b||", tools.Cursor{X: 0, Y: 2, Visible: true}, 0, 1},
		{"the marker", nil, "two rows", "a|b||", tools.Cursor{X: 0, Y: 2, Visible: true}, 1000, 2},
		{"just before c", ms(1999), "", "a|b||", tools.Cursor{X: 0, Y: 2, Visible: true}, 1999, 2},
		{"c", ms(2000), "", "a|b|c|", tools.Cursor{X: 1, Y: 2, Visible: true}, 2000, 3},
		{"the exit", ms(3000), "", "a|b|c|", tools.Cursor{X: 1, Y: 2, Visible: true}, 3000, 3},
		{"the end", nil, "", "a|b|c|", tools.Cursor{X: 1, Y: 2, Visible: true}, 3000, 3},
	}
	for _, tc := range cases {
		s, at, err := tr.FrameAt(tc.time, tc.marker)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := strings.Join(s.Lines, "|"); got != tc.lines || s.Cursor != tc.cursor || at != tc.shows || s.Revision != tc.wantEvent || s.Columns != 10 || s.Rows != 4 {
			t.Errorf("%s: lines %q cursor %+v shows %d revision %d; want %q %+v %d %d", tc.name, got, s.Cursor, at, s.Revision, tc.lines, tc.cursor, tc.shows, tc.wantEvent)
		}
	}
	d, err := tr.Diff(1000, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(d.Rows) != "[{2 c}]" || d.Cursor != (tools.Position{X: 1, Y: 2}) || d.Revision != 3 {
		t.Errorf("Diff(1000, 2000) = %+v", d)
	}
	if d, _ := tr.Diff(0, 1999); len(d.Rows) != 0 {
		t.Errorf("Diff(0, 1999) = %+v, want no rows", d)
	}
	if d, _ := tr.Diff(2500, 2500); len(d.Rows) != 0 || d.Rows == nil {
		t.Errorf("Diff(2500, 2500) = %+v, want an empty list", d)
	}
	o := tr.Overview()
	if o.Exit == nil || o.Exit.TMS != 3000 || o.Exit.ExitCode == nil || *o.Exit.ExitCode != 2 {
		t.Errorf("exit %+v", o.Exit)
	}
	o.Exit = nil
	want := Overview{DurationMS: 3000, Markers: []Marker{{TMS: 1000, Label: "two rows"}},
		Inputs:  []InputSummary{{Kind: "paste", Count: 2, Bytes: 42}, {Kind: "press", Count: 1, Bytes: 1}},
		Resizes: []Resize{}, Gaps: []Gap{}, Events: 3, OutputBytes: 7}
	if fmt.Sprintf("%+v", o) != fmt.Sprintf("%+v", want) {
		t.Errorf("overview\n got %+v\nwant %+v", o, want)
	}
	if m := tr.Meta(); m.Node != "build" || m.Columns != 10 || *m.ExitCode != 2 {
		t.Errorf("meta %+v", m)
	}
}

func TestFrameAtAndDiffErrors(t *testing.T) {
	t.Parallel()
	tr, err := Open(knownTrace(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	cases := []struct {
		name   string
		call   func() error
		kind   tools.Kind
		substr string
	}{
		{"both", func() error { _, _, err := tr.FrameAt(ms(5), "two rows"); return err }, tools.KindUsage, "not both"},
		{"past the end", func() error { _, _, err := tr.FrameAt(ms(3001), ""); return err }, tools.KindUsage, "past the end of the recording (duration_ms 3000)"},
		{"negative", func() error { _, _, err := tr.FrameAt(ms(-1), ""); return err }, tools.KindUsage, "negative"},
		{"unknown marker", func() error { _, _, err := tr.FrameAt(nil, "three"); return err }, tools.KindNotFound, `no marker "three"; markers: "two rows"`},
		{"diff backwards", func() error { _, err := tr.Diff(2000, 1000); return err }, tools.KindUsage, "after to_ms"},
		{"diff past the end", func() error { _, err := tr.Diff(0, 9000); return err }, tools.KindUsage, "duration_ms 3000"},
	}
	for _, tc := range cases {
		err := tc.call()
		if tools.KindOf(err) != tc.kind || err == nil || !strings.Contains(err.Error(), tc.substr) {
			t.Errorf("%s: %v (kind %q), want %s containing %q", tc.name, err, tools.KindOf(err), tc.kind, tc.substr)
		}
	}
	var te *tools.Error
	_, _, err = tr.FrameAt(ms(4000), "")
	if te = tools.AsError(err); te.Details["duration_ms"] != int64(3000) {
		t.Errorf("details %v", te.Details)
	}
	_, _, err = tr.FrameAt(nil, "nope")
	if te = tools.AsError(err); fmt.Sprint(te.Details["markers"]) != "[two rows]" {
		t.Errorf("details %v", te.Details)
	}
	bare := writeFile(t, "bare.cast", `{"version":2,"width":5,"height":2}`+"\n"+`[0.5, "o", "x"]`+"\n")
	tr2, err := Open(bare)
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	if _, _, err := tr2.FrameAt(nil, "m"); tools.KindOf(err) != tools.KindNotFound || !strings.Contains(err.Error(), "has no markers") {
		t.Errorf("no markers: %v", err)
	}
	tr2.Close()
	if _, _, err := tr2.FrameAt(nil, ""); err == nil {
		t.Errorf("FrameAt after Close worked")
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// zipFile is an entry; a body starting with symlinkBody makes a symlink.
type zipFile struct {
	name, body string
}

const symlinkBody = "\x00symlink:"

func writeZip(t *testing.T, files []zipFile) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate}
		if rest, ok := strings.CutPrefix(f.body, symlinkBody); ok {
			h.SetMode(os.ModeSymlink | 0o777)
			f.body = rest
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "trace.zip", buf.String())
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	rec := knownTrace(t)
	cast, _ := os.ReadFile(filepath.Join(rec, CastFile))
	meta, _ := os.ReadFile(filepath.Join(rec, MetaFile))
	emptyDir := t.TempDir()
	big := t.TempDir()
	if err := os.WriteFile(filepath.Join(big, CastFile), cast, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(big, CastFile), MaxTraceBytes+1); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		path   string
		kind   tools.Kind
		substr string
	}{
		{"missing", filepath.Join(emptyDir, "nope"), tools.KindNotFound, "no such file"},
		{"empty directory", emptyDir, tools.KindUsage, "not a trace: no session.cast"},
		{"a text file", writeFile(t, "notes.txt", "hello\nworld\n"), tools.KindUsage, "not a trace"},
		{"a v1 cast", writeFile(t, "old.cast", `{"version":1,"width":80,"height":24,"stdout":[]}`), tools.KindUsage, "version 1"},
		{"no size", writeFile(t, "nosize.cast", `{"version":2}`+"\n"), tools.KindUsage, "header size"},
		{"over 128 MB", big, tools.KindUsage, "over the 128 MB limit"},
		{"zip with ../x", writeZip(t, []zipFile{{"../x", "x"}, {CastFile, string(cast)}}), tools.KindUsage, `"../x" is refused: a '..' component`},
		{"zip with rec/../session.cast", writeZip(t, []zipFile{{"rec/../" + CastFile, string(cast)}}), tools.KindUsage, "'..' component"},
		{"zip with an absolute path", writeZip(t, []zipFile{{"/etc/" + CastFile, string(cast)}}), tools.KindUsage, "absolute path"},
		{"zip with a drive letter", writeZip(t, []zipFile{{"C:/" + CastFile, string(cast)}}), tools.KindUsage, "absolute path"},
		{"zip with a backslash", writeZip(t, []zipFile{{`..\` + CastFile, string(cast)}}), tools.KindUsage, "backslash"},
		{"zip with another file", writeZip(t, []zipFile{{CastFile, string(cast)}, {"run.sh", "rm -rf /"}}), tools.KindUsage, `"run.sh" is refused: not one of`},
		{"zip nested", writeZip(t, []zipFile{{"a/b/" + CastFile, string(cast)}}), tools.KindUsage, "nested directory"},
		{"zip in two directories", writeZip(t, []zipFile{{"a/" + CastFile, string(cast)}, {"b/" + MetaFile, string(meta)}}), tools.KindUsage, "different directories"},
		{"zip with two casts", writeZip(t, []zipFile{{CastFile, string(cast)}, {CastFile, string(cast)}}), tools.KindUsage, "second copy"},
		{"zip with a symlink", writeZip(t, []zipFile{{CastFile, symlinkBody + "/etc/passwd"}}), tools.KindUsage, "not a regular file"},
		{"zip without a cast", writeZip(t, []zipFile{{MetaFile, string(meta)}}), tools.KindUsage, "no session.cast"},
		{"not a zip", writeFile(t, "broken.zip", "PK\x03\x04garbage"), tools.KindUsage, "not a readable zip"},
	}
	for _, tc := range cases {
		tr, err := Open(tc.path)
		if err == nil {
			tr.Close()
		}
		if tools.KindOf(err) != tc.kind || err == nil || !strings.Contains(err.Error(), tc.substr) {
			t.Errorf("%s: %v (kind %q), want %s containing %q", tc.name, err, tools.KindOf(err), tc.kind, tc.substr)
		}
	}
}

func TestOpenZipOverTheLimit(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("rec/" + CastFile)
	w.Write([]byte(`{"version":2,"width":80,"height":24}` + "\n"))
	zeros := make([]byte, 1<<20)
	for range MaxTraceBytes>>20 + 1 {
		w.Write(zeros)
	}
	zw.Close()
	p := writeFile(t, "huge.zip", buf.String())
	_, err := Open(p)
	if tools.KindOf(err) != tools.KindUsage || !strings.Contains(err.Error(), "over the 128 MB limit") {
		t.Errorf("a zip expanding to 129 MB: %v", err)
	}
}

func TestOpenZipOfARecording(t *testing.T) {
	t.Parallel()
	rec := knownTrace(t)
	var files, flat []zipFile
	files = append(files, zipFile{name: "build-20261201T101500Z/"})
	for _, f := range []string{MetaFile, CastFile, EventsFile} {
		b, _ := os.ReadFile(filepath.Join(rec, f))
		files = append(files, zipFile{name: "build-20261201T101500Z/" + f, body: string(b)})
		flat = append(flat, zipFile{name: f, body: string(b)})
	}
	for name, z := range map[string]string{"in a directory": writeZip(t, files), "flat": writeZip(t, flat)} {
		tr, err := Open(z)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s, at, err := tr.FrameAt(nil, "two rows")
		if err != nil || strings.Join(s.Lines, "|") != "a|b||" || at != 1000 {
			t.Errorf("%s: %q %d %v", name, s.Lines, at, err)
		}
		if o := tr.Overview(); o.DurationMS != 3000 || len(o.Inputs) != 2 || tr.Meta().Node != "build" {
			t.Errorf("%s: overview %+v meta %+v", name, o, tr.Meta())
		}
		tr.Close()
	}
}

func TestTruncatedCast(t *testing.T) {
	t.Parallel()
	head := `{"version":2,"width":10,"height":3}` + "\n" + `[0.1, "o", "one\r\n"]` + "\n" + `[0.2, "m", "m1"]` + "\n"
	cases := []struct {
		name, tail string
		truncated  bool
		warning    string
		lines      string
	}{
		{"complete", `[0.3, "o", "two"]` + "\n", false, "", "one|two|"},
		{"no final newline", `[0.3, "o", "two"]`, false, "", "one|two|"},
		{"cut short", `[0.3, "o", "tw`, true, "the last line (4) is cut short: ignored", "one||"},
		{"cut in an escape", `[0.3, "o", "t\u00`, true, "cut short", "one||"},
		{"a bad line in the middle", `[0.3, "o", "two"` + "\n" + `[0.4, "o", "three"]` + "\n", true, "line 4 does not parse", "one||"},
		{"blank lines", "\n\n" + `[0.3, "o", "two"]` + "\n\n", false, "", "one|two|"},
		{"time going back", `[0.05, "o", "two"]` + "\n", false, "1 events went back in time", "one|two|"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Open(writeFile(t, "t.cast", head+tc.tail))
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			o := tr.Overview()
			if o.Truncated != tc.truncated || (tc.warning != "" && !strings.Contains(strings.Join(o.Warnings, ";"), tc.warning)) {
				t.Errorf("truncated %v warnings %q", o.Truncated, o.Warnings)
			}
			s, _, err := tr.FrameAt(nil, "")
			if err != nil || strings.Join(s.Lines, "|") != tc.lines {
				t.Errorf("end frame %q %v, want %q", s.Lines, err, tc.lines)
			}
			if s, _, _ := tr.FrameAt(nil, "m1"); strings.Join(s.Lines, "|") != "one||" {
				t.Errorf("marker frame %q", s.Lines)
			}
		})
	}
}

func TestRegistryClosesTheColdest(t *testing.T) {
	t.Parallel()
	var paths []string
	for i := range MaxOpenTraces + 2 {
		paths = append(paths, writeFile(t, fmt.Sprintf("t%d.cast", i), fmt.Sprintf(`{"version":2,"width":5,"height":2}`+"\n"+`[0.5, "o", "%d"]`+"\n", i)))
	}
	reg := NewRegistry()
	defer reg.CloseAll()
	for i := range MaxOpenTraces {
		id, _, evicted, err := reg.Open(paths[i])
		if err != nil || len(evicted) != 0 || id != fmt.Sprintf("trace-%d", i+1) {
			t.Fatalf("open %d: %q %q %v", i, id, evicted, err)
		}
	}
	// trace-1 is used again, so trace-2 is now the coldest.
	if _, err := reg.Get("trace-1"); err != nil {
		t.Fatal(err)
	}
	id, tr, evicted, err := reg.Open(paths[MaxOpenTraces])
	if err != nil || id != "trace-9" || strings.Join(evicted, ",") != "trace-2" {
		t.Fatalf("the ninth: %q evicted %q %v", id, evicted, err)
	}
	if s, _, _ := tr.FrameAt(nil, ""); s.Lines[0] != "8" {
		t.Errorf("trace-9 shows %q", s.Lines)
	}
	_, err = reg.Get("trace-2")
	if tools.KindOf(err) != tools.KindNotFound || !strings.Contains(err.Error(), "closed as the coldest") || !strings.Contains(err.Error(), "trace-1, trace-3") {
		t.Errorf("Get(trace-2): %v", err)
	}
	if got := strings.Join(reg.IDs(), " "); got != "trace-1 trace-3 trace-4 trace-5 trace-6 trace-7 trace-8 trace-9" {
		t.Errorf("ids %s", got)
	}
	// The same unchanged path gives the same trace; a changed one a new id.
	if id, _, evicted, _ := reg.Open(paths[0]); id != "trace-1" || len(evicted) != 0 {
		t.Errorf("reopen: %q %q", id, evicted)
	}
	os.WriteFile(paths[0], []byte(`{"version":2,"width":5,"height":2}`+"\n"+`[0.5, "o", "changed"]`+"\n"), 0o600)
	os.Chtimes(paths[0], time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	if id, _, evicted, _ := reg.Open(paths[0]); id != "trace-10" || strings.Join(evicted, ",") != "trace-3" {
		t.Errorf("reopen after a change: %q %q", id, evicted)
	}
	if err := reg.Close("trace-10"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Close("trace-10"); tools.KindOf(err) != tools.KindNotFound {
		t.Errorf("second close: %v", err)
	}
	if _, _, _, err := reg.Open(filepath.Join(t.TempDir(), "missing")); tools.KindOf(err) != tools.KindNotFound {
		t.Errorf("missing: %v", err)
	}
	reg.CloseAll()
	if _, err := reg.Get("trace-1"); err == nil || !strings.Contains(err.Error(), "no trace is open") {
		t.Errorf("after CloseAll: %v", err)
	}
}

// Many callers on one trace at once (run with -race).
func TestTraceConcurrentFrames(t *testing.T) {
	t.Parallel()
	evs := genEvents(3, 30, 6, 600, 20, true)
	raw := buildCast(30, 6, evs)
	tr := openCast(t, raw, 1024)
	want := plainFrames(t, tr.c)
	go tr.Warm()
	done := make(chan string, 4)
	for g := range 4 {
		go func() {
			for i := range 40 {
				n := (g*97 + i*31) % len(want)
				got, err := tr.frame(n)
				if err != nil {
					done <- err.Error()
					return
				}
				if d := diffScreens(got, want[n]); d != "" {
					done <- fmt.Sprintf("frame %d: %s", n, d)
					return
				}
			}
			done <- ""
		}()
	}
	for range 4 {
		if msg := <-done; msg != "" {
			t.Fatal(msg)
		}
	}
}

func TestWithFrameShowsTheEmulator(t *testing.T) {
	t.Parallel()
	evs := genEvents(5, 30, 6, 800, 20, false)
	raw := buildCast(30, 6, evs)
	tr := openCast(t, raw, 1024)
	want := plainFrames(t, tr.c)
	tr.frame(len(want) - 1) // keyframes exist; WithFrame must not use them
	for _, n := range []int{len(want) - 1, len(want) / 2, 0} {
		ms := int64(0)
		if n > 0 {
			ms = tr.c.events[n-1].us / 1000
		}
		var got string
		var rows []string
		if _, err := tr.WithFrame(&ms, "", func(s *screen.Screen) { rows = s.Rows(); got = fmt.Sprint(s.Snapshot().Cursor) }); err != nil {
			t.Fatal(err)
		}
		// The moment ms may take in later events of the same millisecond.
		m := sortSearch(tr, ms)
		if fmt.Sprint(rows) != fmt.Sprint(want[m].Lines) || got != fmt.Sprint(want[m].Cursor) {
			t.Errorf("WithFrame(%d): %q %s, want %q %v", ms, rows, got, want[m].Lines, want[m].Cursor)
		}
	}
	if _, err := tr.WithFrame(ms(1<<40), "", func(*screen.Screen) { t.Error("called past the end") }); tools.KindOf(err) != tools.KindUsage {
		t.Errorf("past the end: %v", err)
	}
}

func sortSearch(tr *Trace, ms int64) int {
	n := 0
	for n < len(tr.c.events) && tr.c.events[n].us/1000 <= ms {
		n++
	}
	return n
}
