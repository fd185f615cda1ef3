package lostnodes

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// files writes the files a node leaves behind: metadata, session file,
// input mark and, when launched, its kept launch in cwd.
func files(t *testing.T, dir, id, cwd string, launched bool) statefile.NodeMeta {
	t.Helper()
	for _, d := range []string{filepath.Join(dir, statefile.NodesDir), filepath.Dir(tools.SessionPath(dir, id))} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	m := statefile.NodeMeta{ID: id, Name: "n-" + id, Command: []string{"bash"}, Cwd: cwd, Owner: "p1", Created: time.Now().UTC()}
	if err := tools.WriteJSONAtomic(statefile.Path(dir, id, statefile.Meta), m); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{tools.SessionPath(dir, id), statefile.Path(dir, id, statefile.Input)} {
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if launched {
		spec := statefile.LaunchSpec{Command: []string{"bash", "-l"}, Cwd: cwd, Owner: "p1", Parent: "p1", Record: true}
		if err := statefile.WriteLaunch(dir, id, statefile.NewLaunchRecord(spec, "sock")); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func newTable(dir string) *Table { return New(dir, slog.New(slog.NewTextHandler(io.Discard, nil))) }

func gone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s is still there (err %v)", filepath.Base(path), err)
	}
}

func TestAdopt(t *testing.T) {
	cases := []struct {
		name     string
		launched bool
		closing  bool
		listed   bool
	}{
		{"kept launch: listed lost", true, false, true},
		{"no kept launch: forgotten", false, false, false},
		{"a close was under way: finished, not lost", true, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			m := files(t, dir, "a1", dir, c.launched)
			if c.closing {
				if err := os.WriteFile(statefile.Path(dir, "a1", statefile.Closing), []byte("{}"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			tb := newTable(dir)
			e := tb.Adopt(m)
			if (e != nil) != c.listed || (tb.Get("a1") != nil) != c.listed {
				t.Fatalf("listed = %v, %v; want %v", e != nil, tb.Get("a1") != nil, c.listed)
			}
			if !c.listed {
				return
			}
			if e.Status != tools.StatusLost || e.Launch.Spec.Cwd != dir {
				t.Errorf("entry = %s in %q; want lost with its kept launch", e.Status, e.Launch.Spec.Cwd)
			}
			read, err := statefile.ReadMeta(dir, "a1")
			if err != nil || read.LostAt.IsZero() {
				t.Errorf("metadata not marked lost: %+v, %v", read.LostAt, err)
			}
			gone(t, tools.SessionPath(dir, "a1"))
			gone(t, statefile.Path(dir, "a1", statefile.Input))
		})
	}
}

func TestDied(t *testing.T) {
	for _, exited := range []bool{false, true} {
		dir := t.TempDir()
		m := files(t, dir, "d1", dir, true)
		rec, err := statefile.ReadLaunch(dir, "d1")
		if err != nil {
			t.Fatal(err)
		}
		var code *int
		if exited {
			code = new(3)
		}
		tb := newTable(dir)
		e := tb.Died(m, tools.Screen{Lines: []string{"$ last"}}, code, rec)
		want := tools.StatusLost
		if exited {
			want = tools.StatusExited
		}
		if e.Status != want || tb.Get("d1") != nil {
			t.Errorf("exited %v: status %s, listed before Put %v; want %s, not listed", exited, e.Status, tb.Get("d1") != nil, want)
		}
		var ks statefile.KeptScreen
		if err := statefile.ReadJSON(statefile.Path(dir, "d1", statefile.Screen), &ks); err != nil || len(ks.Lines) != 1 || ks.Lines[0] != "$ last" {
			t.Errorf("kept screen = %+v, %v", ks, err)
		}
		if exited && (ks.ExitCode == nil || *ks.ExitCode != 3) {
			t.Errorf("kept screen's exit code = %v; want 3", ks.ExitCode)
		}
		read, _ := statefile.ReadMeta(dir, "d1")
		if read.LostAt.IsZero() == !exited {
			t.Errorf("exited %v: metadata LostAt = %v", exited, read.LostAt)
		}
		gone(t, tools.SessionPath(dir, "d1"))
	}
}

func TestRestoreAndForget(t *testing.T) {
	dir := t.TempDir()
	tb := newTable(dir)
	if _, err := tb.BeginRestore("nope"); !errors.Is(err, ErrNotListed) {
		t.Fatalf("restore of an unknown id: %v; want ErrNotListed", err)
	}
	if _, err := tb.Take("nope"); !errors.Is(err, ErrNotListed) {
		t.Fatalf("forget of an unknown id: %v; want ErrNotListed", err)
	}
	e := tb.Adopt(files(t, dir, "r1", dir, true))
	got, err := tb.BeginRestore("r1")
	if err != nil || got != e {
		t.Fatalf("BeginRestore = %v, %v", got, err)
	}
	if _, err := tb.BeginRestore("r1"); tools.KindOf(err) != tools.KindConflict {
		t.Errorf("a second restore: %v; want conflict", err)
	}
	if _, err := tb.Take("r1"); tools.KindOf(err) != tools.KindConflict {
		t.Errorf("forget during a restore: %v; want conflict", err)
	}
	tb.EndRestore(e, false)
	if tb.Get("r1") != e {
		t.Fatal("a failed restore unlisted the node")
	}
	if _, err := tb.BeginRestore("r1"); err != nil {
		t.Fatal(err)
	}
	tb.EndRestore(e, true)
	if tb.Get("r1") != nil {
		t.Fatal("a restored node is still listed")
	}

	x := tb.Adopt(files(t, dir, "x1", dir, true))
	x.Status = tools.StatusExited
	if _, err := tb.BeginRestore("x1"); tools.KindOf(err) != tools.KindConflict {
		t.Errorf("restore of an exited node: %v; want conflict", err)
	}
	if taken, err := tb.Take("x1"); err != nil || taken != x || tb.Get("x1") != nil {
		t.Errorf("Take = %v, %v; listed after: %v", taken, err, tb.Get("x1") != nil)
	}
}

func TestRestoreSpec(t *testing.T) {
	dir := t.TempDir()
	e := newTable(dir).Adopt(files(t, dir, "s1", dir, true))
	spec, err := e.RestoreSpec("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Cwd != dir || spec.Owner != tools.OperatorNode || spec.Parent != "" || spec.Record || spec.Name != "n-s1" || spec.Command[1] != "-l" {
		t.Errorf("spec = %+v; want the kept launch, the operator's, recording resumed", spec)
	}
	other := t.TempDir()
	if spec, err := e.RestoreSpec(other, []string{"claude", "--resume", "c"}); err != nil || spec.Cwd != other || spec.Command[0] != "claude" {
		t.Errorf("spec with cwd and command = %+v, %v", spec, err)
	}
	for _, cwd := range []string{"relative/dir", filepath.Join(dir, "gone")} {
		if _, err := e.RestoreSpec(cwd, nil); tools.KindOf(err) != tools.KindUsage {
			t.Errorf("cwd %q: %v; want a usage error", cwd, err)
		}
	}
}
