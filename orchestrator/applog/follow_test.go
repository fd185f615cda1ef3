package applog

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// fakeScreen stands for the node's mirror: a revision that only Mark and
// the test move.
type fakeScreen struct {
	mu  sync.Mutex
	rev uint64
}

func (s *fakeScreen) Revision() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev
}

func (s *fakeScreen) Mark() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rev++
	return s.rev
}

func (s *fakeScreen) ChangesSince(rev uint64) (tools.Changes, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev > s.rev {
		return tools.Changes{}, fmt.Errorf("cursor %d is after the revision %d", rev, s.rev)
	}
	return tools.Changes{Revision: s.rev}, nil
}

// follow starts a follower on logs that ends with the test, and checks
// that its goroutine ends and closes its files then.
func follow(t *testing.T, logs ...tools.LogSpec) (*Follower, *fakeScreen) {
	t.Helper()
	logs, err := Resolve(logs, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	scr := &fakeScreen{rev: 100}
	done := make(chan struct{})
	lf, err := Follow(logs, scr, done, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-lf.Ready()
	t.Cleanup(func() {
		close(done)
		select {
		case <-lf.Stopped():
		case <-time.After(10 * time.Second):
			t.Error("the follower did not stop when done closed")
		}
	})
	return lf, scr
}

// until captures since cursor until ok accepts it, woken by the follower
// (never by polling a clock).
func until(t *testing.T, lf *Follower, cursor uint64, ok func(tools.Changes) bool) tools.Changes {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		changed := lf.Changed()
		ch, err := lf.ChangesSince(cursor)
		if err != nil {
			t.Fatal(err)
		}
		if ok(ch) {
			return ch
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the logs never satisfied the test; last capture: %+v", ch)
		}
	}
}

func texts(ch tools.Changes) []string {
	var out []string
	for _, l := range ch.Logs {
		out = append(out, l.Label+": "+l.Line)
	}
	return out
}

func lines(want ...string) func(tools.Changes) bool {
	return func(ch tools.Changes) bool { return strings.Join(texts(ch), "\n") == strings.Join(want, "\n") }
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// Followed from the end; each line once, stamped and labelled; a capture's
// revision is a cursor after every line it returned, also when the screen
// did not move (Mark).
func TestFollow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	app, db := filepath.Join(dir, "app.log"), filepath.Join(dir, "db.log")
	os.WriteFile(app, []byte("old line before the start\n"), 0o600)
	os.WriteFile(db, nil, 0o600)
	lf, scr := follow(t, tools.LogSpec{Path: app, Label: "app"}, tools.LogSpec{Path: db})
	if l, m := lf.Labels(); strings.Join(l, ",") != "app,db.log" || len(m) != 0 {
		t.Fatalf("labels %v missing %v", l, m)
	}
	start := scr.Revision()
	before := time.Now().UnixMilli()
	appendFile(t, app, "first\nsecond\r\n")
	appendFile(t, db, "half a ")
	appendFile(t, db, "line\n")
	ch := until(t, lf, start, lines("app: first", "app: second", "db.log: half a line"))
	if ch.Logs[0].MS < before || ch.LogsOmitted == nil || *ch.LogsOmitted != 0 {
		t.Fatalf("capture %+v", ch)
	}
	if ch.Revision <= start {
		t.Fatalf("the capture's revision %d is not after the lines' %d: the next capture would return them again", ch.Revision, start)
	}
	if again, _ := lf.ChangesSince(ch.Revision); len(again.Logs) != 0 {
		t.Fatalf("lines returned twice: %v", texts(again))
	}
	// A line longer than MaxLineBytes is cut.
	appendFile(t, app, strings.Repeat("x", 10000)+"\nshort\n")
	ch2 := until(t, lf, ch.Revision, func(c tools.Changes) bool { return len(c.Logs) == 2 })
	if l := ch2.Logs[0].Line; len(l) != MaxLineBytes+len("…") || ch2.Logs[1].Line != "short" {
		t.Fatalf("long line %d bytes, then %q", len(l), ch2.Logs[1].Line)
	}
}

// A deleted and recreated log, a rotated one (renamed away, a new file
// created) and a truncated one go on being followed.
func TestRotation(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "app.log")
	os.WriteFile(p, nil, 0o600)
	lf, scr := follow(t, tools.LogSpec{Path: p, Label: "app"})
	cur := scr.Revision()

	appendFile(t, p, "one\n")
	cur = until(t, lf, cur, lines("app: one")).Revision
	os.Remove(p)
	until(t, lf, cur, func(tools.Changes) bool { _, m := lf.Labels(); return len(m) == 1 })
	appendFile(t, p, "two, in the recreated file\n")
	cur = until(t, lf, cur, lines("app: two, in the recreated file")).Revision
	if _, m := lf.Labels(); len(m) != 0 {
		t.Fatalf("recreated log still missing: %v", m)
	}

	// Rotation: the program's last line goes to the renamed file, the
	// next ones to a new file.
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	os.Rename(p, p+".1")
	f.WriteString("three, before the rotation\n")
	f.Close()
	appendFile(t, p, "four, after it\n")
	cur = until(t, lf, cur, lines("app: three, before the rotation", "app: four, after it")).Revision

	// Truncation (copytruncate): read from the start again.
	appendFile(t, p, "five\n")
	cur = until(t, lf, cur, lines("app: five")).Revision
	os.Truncate(p, 0)
	appendFile(t, p, "six\n")
	until(t, lf, cur, lines("app: six"))
}

// 10 MB at once: the last tools.MaxLogLines lines are kept, the rest
// counted as omitted for a cursor before them and not after.
func TestFlood(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "flood.log")
	os.WriteFile(p, nil, 0o600)
	lf, scr := follow(t, tools.LogSpec{Path: p, Label: "flood"})
	cur := scr.Revision()
	var b strings.Builder
	n := 0
	for b.Len() < 10<<20 {
		fmt.Fprintf(&b, "line %07d %s\n", n, strings.Repeat("z", 80))
		n++
	}
	appendFile(t, p, b.String())
	last := fmt.Sprintf("line %07d", n-1)
	ch := until(t, lf, cur, func(c tools.Changes) bool {
		return len(c.Logs) > 0 && strings.HasPrefix(c.Logs[len(c.Logs)-1].Line, last)
	})
	if len(ch.Logs) != tools.MaxLogLines || *ch.LogsOmitted != n-tools.MaxLogLines {
		t.Fatalf("%d lines kept, %d omitted; want %d and %d", len(ch.Logs), *ch.LogsOmitted, tools.MaxLogLines, n-tools.MaxLogLines)
	}
	if want := fmt.Sprintf("line %07d", n-tools.MaxLogLines); !strings.HasPrefix(ch.Logs[0].Line, want) {
		t.Fatalf("first kept line %q, want %s", ch.Logs[0].Line[:12], want)
	}
	if after, _ := lf.ChangesSince(ch.Revision); *after.LogsOmitted != 0 || len(after.Logs) != 0 {
		t.Fatalf("after the flood: %d omitted, %d lines", *after.LogsOmitted, len(after.Logs))
	}
}

// A file that does not exist yet is missing until it appears, and then
// read from its start.
func TestMissingFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	later := filepath.Join(dir, "later.log")
	lf, scr := follow(t, tools.LogSpec{Path: later, Label: "later"})
	if _, m := lf.Labels(); strings.Join(m, ",") != "later" {
		t.Fatalf("missing %v", m)
	}
	appendFile(t, later, "it exists now\n")
	until(t, lf, scr.Revision(), lines("later: it exists now"))
	if _, m := lf.Labels(); len(m) != 0 {
		t.Fatalf("still missing: %v", m)
	}
}

// Bad logs are refused with kind usage and a message that says what to fix.
func TestResolve(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "app.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		name string
		logs []tools.LogSpec
		want string
	}{
		{"a directory", []tools.LogSpec{{Path: dir}}, "is a directory"},
		{"a socket", []tools.LogSpec{{Path: sock}}, "not a regular file"},
		{"a missing directory", []tools.LogSpec{{Path: filepath.Join(dir, "nope", "app.log")}}, "does not exist; create it first"},
		{"two equal labels", []tools.LogSpec{{Path: filepath.Join(dir, "a.log"), Label: "x"}, {Path: filepath.Join(dir, "b.log"), Label: "x"}}, `two logs are labelled "x"`},
		{"two equal base names", []tools.LogSpec{{Path: filepath.Join(dir, "a.log")}, {Path: "a.log"}}, `two logs are labelled "a.log"`},
		{"too many", make([]tools.LogSpec, tools.MaxLogs+1), "at most"},
	} {
		_, err := Resolve(tc.logs, dir)
		if err == nil || tools.KindOf(err) != tools.KindUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want usage containing %q", tc.name, err, tc.want)
		}
	}
	got, err := Resolve([]tools.LogSpec{{Path: "rel/../x.log"}}, dir)
	if err != nil || len(got) != 1 || got[0].Path != filepath.Join(dir, "x.log") || got[0].Label != "x.log" {
		t.Fatalf("relative path: %+v %v", got, err)
	}
	if got, err := Resolve(nil, dir); got != nil || err != nil {
		t.Fatalf("no logs: %+v %v", got, err)
	}
}

// However a file's bytes arrive in reads, the follower's lines are the
// file's lines (cut at MaxLineBytes), never holding a newline.
func FuzzLogSplit(f *testing.F) {
	f.Add([]byte("one\ntwo\r\nthree"), uint16(3))
	f.Add([]byte(strings.Repeat("x", 5000)+"\ny\n"), uint16(1000))
	f.Add([]byte("\n\n\xff\xfe\n"), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		lf := &Follower{}
		lg := &logFile{}
		k := int(cut) % (len(data) + 1)
		lines := append(lf.split(lg, data[:k]), lf.split(lg, data[k:])...)
		var want []string
		whole := string(data)
		parts := strings.Split(whole, "\n")
		for _, p := range parts[:len(parts)-1] { // the last has no newline yet
			if len(p) > MaxLineBytes {
				p = p[:MaxLineBytes]
				want = append(want, logText([]byte(p))+"…")
				continue
			}
			want = append(want, logText([]byte(p)))
		}
		if last := parts[len(parts)-1]; len(last) > MaxLineBytes {
			// An unfinished line that is already too long is given early.
			want = append(want, logText([]byte(last[:MaxLineBytes]))+"…")
		}
		if strings.Join(lines, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("split %q at %d: %q, want %q", data, k, lines, want)
		}
		for _, l := range lines {
			if strings.Contains(l, "\n") {
				t.Fatalf("a line holds a newline: %q", l)
			}
		}
	})
}
