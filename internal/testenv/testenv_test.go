package testenv

import "testing"

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
