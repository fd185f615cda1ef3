package testenv

import (
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

// A missing program skips on a developer's machine and fails in CI.
func TestLookPathMissingSkipsOrFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(RequireAllVar, "")
	o := RunHelper(t, func(tb testing.TB) { LookPath(tb, "tmux", "apt-get install tmux") })
	if o.Skipped == "" || o.Failed != "" || !strings.Contains(o.Skipped, "apt-get install tmux") {
		t.Fatalf("without %s: %+v; want a skip naming the install command", RequireAllVar, o)
	}
	t.Setenv(RequireAllVar, "1")
	o = RunHelper(t, func(tb testing.TB) { LookPath(tb, "tmux", "apt-get install tmux") })
	if o.Failed == "" || o.Skipped != "" || !strings.Contains(o.Failed, "tmux is not installed") {
		t.Fatalf("with %s: %+v; want a failure", RequireAllVar, o)
	}
	if o := RunHelper(t, func(testing.TB) {}); o != (Outcome{}) {
		t.Fatalf("a helper that returns: %+v", o)
	}
}
