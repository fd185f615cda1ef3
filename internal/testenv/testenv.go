// Package testenv gives tests the outside tools they need: it decides
// whether a missing tool skips the test (a developer's machine) or fails
// it (CI, where TERMSPRAWL_REQUIRE_ALL is set and .ci/run installs every
// tool), and installs npm packages into a cache shared by test runs.
package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// RequireAllVar is the environment variable under which a skip for a
// missing tool or permission fails the test instead.
const RequireAllVar = "TERMSPRAWL_REQUIRE_ALL"

// RequireAll reports whether skips must fail.
func RequireAll() bool { return os.Getenv(RequireAllVar) != "" }

// SkipOrFail skips the test with the message, or fails it under
// TERMSPRAWL_REQUIRE_ALL. The message should name the install command.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if RequireAll() {
		t.Fatalf(RequireAllVar+" is set, so this may not skip: "+format, args...)
	}
	t.Skipf(format, args...)
}

// Outcome is how a helper run by RunHelper ended: the message of its
// skip or of its failure, both empty when it returned.
type Outcome struct{ Skipped, Failed string }

// RunHelper calls f with a stand-in for t that records a skip or a fatal
// failure instead of ending t (each ends f, as t's own would), so a test
// of a helper that skips or fails sees what the helper decided.
func RunHelper(t testing.TB, f func(testing.TB)) Outcome {
	t.Helper()
	r := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.out
}

type recordingTB struct {
	testing.TB
	out Outcome
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Skip(args ...any) { r.Skipf("%s", fmt.Sprint(args...)) }

func (r *recordingTB) Skipf(format string, args ...any) {
	r.out.Skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recordingTB) SkipNow() { r.Skipf("skipped") }

func (r *recordingTB) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.out.Failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recordingTB) FailNow() { r.Fatalf("failed") }

// LookPath finds a program, or skips (fails in CI) naming how to install it.
func LookPath(t testing.TB, program, install string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err != nil {
		SkipOrFail(t, "%s is not installed (%s)", program, install)
	}
	return p
}

// CacheDir is where tests keep what they install: $TERMSPRAWL_TEST_CACHE,
// else the user cache dir's termsprawl-test.
func CacheDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("TERMSPRAWL_TEST_CACHE"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "termsprawl-test")
}

// NPM installs the packages (name@version each, versions pinned by the
// caller) into a directory of the test cache keyed by the package list,
// once: a later call with the same list reuses it. It returns the
// directory holding node_modules. Without npm the test skips (fails in
// CI) naming the install command. Concurrent test binaries installing the
// same list wait for each other on a lock file.
func NPM(t testing.TB, packages ...string) string {
	t.Helper()
	npm := LookPath(t, "npm", "apt-get install npm")
	pk := slices.Clone(packages)
	slices.Sort(pk)
	sum := sha256.Sum256([]byte(strings.Join(pk, "\n")))
	dir := filepath.Join(CacheDir(t), "npm", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		t.Fatalf("locking %s: %v", dir, err)
	}
	defer unlock()
	done := filepath.Join(dir, ".installed")
	if _, err := os.Stat(done); err == nil {
		return dir
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private":true}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"install", "--no-audit", "--no-fund", "--no-save", "--loglevel=error", "--prefix", dir}, pk...)
	cmd := exec.Command(npm, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		SkipOrFail(t, "npm %s failed (%v): %s", strings.Join(args, " "), err, out)
	}
	if err := os.WriteFile(done, []byte(fmt.Sprintln(pk)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// AsciinemaCat runs the real `asciinema cat` on a cast under script(1)
// (asciinema opens /dev/tty) and returns what it printed; a Python
// traceback counts as a failure. Without asciinema the test skips (fails
// in CI) naming the install command.
func AsciinemaCat(t testing.TB, path string) (string, error) {
	t.Helper()
	bin := LookPath(t, "asciinema", "apt-get install -y asciinema")
	script := LookPath(t, "script", "apt-get install -y util-linux")
	out, err := exec.Command(script, "-q", "-e", "-c", bin+" cat '"+path+"'", "/dev/null").CombinedOutput()
	if err == nil && strings.Contains(string(out), "Traceback") {
		err = fmt.Errorf("asciinema cat %s failed", path)
	}
	return string(out), err
}
