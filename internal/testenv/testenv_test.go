package testenv

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

func TestRequireAll(t *testing.T) {
	t.Setenv(RequireAllVar, "")
	if RequireAll() {
		t.Fatal("RequireAll with the variable empty")
	}
	t.Setenv(RequireAllVar, "1")
	if !RequireAll() {
		t.Fatal("RequireAll false with the variable set")
	}
}

func TestCacheDirFollowsVariable(t *testing.T) {
	d := t.TempDir()
	t.Setenv("TERMSPRAWL_TEST_CACHE", d)
	if got := CacheDir(t); got != d {
		t.Fatalf("CacheDir = %q, want %q", got, d)
	}
}

// outcomeTB records whether a helper skipped or failed the test; both end
// the helper's goroutine as the real ones do.
type outcomeTB struct {
	testing.TB
	skipped, failed string
}

func (o *outcomeTB) Helper() {}
func (o *outcomeTB) Skipf(format string, args ...any) {
	o.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (o *outcomeTB) Fatalf(format string, args ...any) {
	o.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with an outcomeTB on its own goroutine and waits for it.
func run(t *testing.T, f func(testing.TB)) *outcomeTB {
	o := &outcomeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(o)
	}()
	<-done
	return o
}

// A missing program skips on a developer's machine and fails in CI.
func TestLookPathMissingSkipsOrFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(RequireAllVar, "")
	o := run(t, func(tb testing.TB) { LookPath(tb, "tmux", "apt-get install tmux") })
	if o.skipped == "" || o.failed != "" || !strings.Contains(o.skipped, "apt-get install tmux") {
		t.Fatalf("without %s: skipped %q, failed %q; want a skip naming the install command", RequireAllVar, o.skipped, o.failed)
	}
	t.Setenv(RequireAllVar, "1")
	o = run(t, func(tb testing.TB) { LookPath(tb, "tmux", "apt-get install tmux") })
	if o.failed == "" || o.skipped != "" || !strings.Contains(o.failed, "tmux is not installed") {
		t.Fatalf("with %s: skipped %q, failed %q; want a failure", RequireAllVar, o.skipped, o.failed)
	}
}
