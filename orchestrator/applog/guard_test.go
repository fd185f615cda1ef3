package applog

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// mkfifo makes a FIFO at path, or skips the test.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		testenv.SkipOrFail(t, "cannot make a FIFO here: %v", err)
	}
}

// unblockFIFO opens the FIFO's write side without blocking, which frees a
// reader stuck in open (so that a failing test ends).
func unblockFIFO(path string) {
	if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}

// missingUntil waits, woken by the follower, until label's missing flag is
// want.
func missingUntil(t *testing.T, lf *Follower, label string, want bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		changed := lf.Changed()
		_, m := lf.Labels()
		got := false
		for _, l := range m {
			got = got || l == label
		}
		if got == want {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("log %q never became missing=%v (missing: %v)", label, want, m)
		}
	}
}

// A FIFO at a followed path — there when following starts (adoption), or
// created later under the name — is never opened for reading in a way
// that blocks: Follow answers, the follower goes on following (the path
// becoming a file again is read) and stops when told.
func TestFollowFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "app.log")
	os.WriteFile(p, nil, 0o600)
	logs, err := Resolve([]tools.LogSpec{{Path: p, Label: "app"}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	// The file became a FIFO while no orchestrator ran.
	os.Remove(p)
	mkfifo(t, p)
	t.Cleanup(func() { unblockFIFO(p) })
	scr := &fakeScreen{rev: 100}
	done := make(chan struct{})
	made := make(chan *Follower, 1)
	go func() {
		lf, err := Follow(logs, scr, done, nil)
		if err != nil {
			t.Error(err)
		}
		made <- lf
	}()
	var lf *Follower
	select {
	case lf = <-made:
	case <-time.After(10 * time.Second):
		unblockFIFO(p)
		t.Fatal("Follow blocked on a FIFO at the log's path")
	}
	select {
	case <-lf.Ready():
	case <-time.After(10 * time.Second):
		unblockFIFO(p)
		t.Fatal("the follower's first open blocked on a FIFO")
	}
	missingUntil(t, lf, "app", true)

	// A regular file again: followed from its start.
	os.Remove(p)
	appendFile(t, p, "a file again\n")
	cur := until(t, lf, scr.Revision(), lines("app: a file again")).Revision

	// A FIFO created later under the name (atomically, by a rename).
	tmp := filepath.Join(dir, "fifo.tmp")
	mkfifo(t, tmp)
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	missingUntil(t, lf, "app", true)
	os.Remove(p)
	appendFile(t, p, "and after the FIFO\n")
	until(t, lf, cur, lines("app: and after the FIFO"))

	close(done)
	select {
	case <-lf.Stopped():
	case <-time.After(10 * time.Second):
		unblockFIFO(p)
		t.Fatal("the follower did not stop")
	}
}

// Resolve refuses a FIFO without blocking.
func TestResolveFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "fifo.log")
	mkfifo(t, p)
	_, err := Resolve([]tools.LogSpec{{Path: p}}, dir)
	if err == nil || tools.KindOf(err) != tools.KindUsage || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a FIFO: %v, want usage, not a regular file", err)
	}
}

// Nothing inside the state dir is followed: refused at launch (also
// through a symbolic link to the file or to a directory), and never read
// when the path later becomes a link to a session file or a hard link to
// one.
func TestStateDirNeverFollowed(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	sessions := filepath.Join(state, "sessions")
	os.MkdirAll(sessions, 0o700)
	secret := filepath.Join(sessions, "n1.json")
	os.WriteFile(secret, []byte(`{"token":"SECRET-TOKEN"}`+"\n"), 0o600)
	out := t.TempDir()
	os.Symlink(secret, filepath.Join(out, "link.log"))
	os.Symlink(sessions, filepath.Join(out, "dirlink"))
	for _, tc := range []struct{ name, path string }{
		{"a file in the state dir", secret},
		{"a missing file in the state dir", filepath.Join(state, "new.log")},
		{"the state dir through ..", filepath.Join(out, "..", filepath.Base(state), "x.log")},
		{"a symbolic link to a session file", filepath.Join(out, "link.log")},
		{"a file under a symbolic link to the sessions dir", filepath.Join(out, "dirlink", "n1.json")},
	} {
		_, err := Resolve([]tools.LogSpec{{Path: tc.path}}, out, state)
		if err == nil || tools.KindOf(err) != tools.KindUsage || !strings.Contains(err.Error(), "state directory") {
			t.Errorf("%s: %v, want usage naming the state directory", tc.name, err)
		}
	}

	// Outside: followed; then the path becomes a link to the session file.
	for _, how := range []string{"symlink", "hardlink"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "app.log")
			os.WriteFile(p, nil, 0o600)
			logs, err := Resolve([]tools.LogSpec{{Path: p, Label: "app"}}, dir, state)
			if err != nil {
				t.Fatal(err)
			}
			scr := &fakeScreen{rev: 100}
			done := make(chan struct{})
			defer close(done)
			lf, err := Follow(logs, scr, done, nil, state)
			if err != nil {
				t.Fatal(err)
			}
			<-lf.Ready()
			cur := scr.Revision()
			appendFile(t, p, "ordinary\n")
			cur = until(t, lf, cur, lines("app: ordinary")).Revision

			tmp := filepath.Join(dir, "swap.tmp")
			if how == "symlink" {
				err = os.Symlink(secret, tmp)
			} else {
				err = os.Link(secret, tmp)
			}
			if err != nil {
				testenv.SkipOrFail(t, "cannot make a %s: %v", how, err)
			}
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
			// Either the follower refuses the new file (missing) or it
			// reads it: wait for whichever comes, then look.
			deadline := time.After(20 * time.Second)
			for {
				changed := lf.Changed()
				ch, _ := lf.ChangesSince(cur)
				for _, l := range ch.Logs {
					if strings.Contains(l.Line, "SECRET") {
						t.Fatalf("the session file was read through the log: %q", l.Line)
					}
				}
				if _, m := lf.Labels(); len(m) == 1 {
					break
				}
				select {
				case <-changed:
				case <-deadline:
					t.Fatal("the follower neither refused nor read the swapped file")
				}
			}
			appendFile(t, secret, `{"token":"SECRET-TWO"}`+"\n")
			os.Remove(p)
			appendFile(t, p, "ordinary again\n")
			ch := until(t, lf, cur, lines("app: ordinary again"))
			for _, l := range ch.Logs {
				if strings.Contains(l.Line, "SECRET") {
					t.Fatalf("the session file was read: %q", l.Line)
				}
			}
		})
	}
}
