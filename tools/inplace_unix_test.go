//go:build unix

package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// RewriteInPlace replaces a file's content within its blocks, refuses
// content that would need more, and never creates a file.
func TestRewriteInPlace(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "m.json")
	os.WriteFile(p, []byte(`{"recording":"/some/where/long"}`+"\n"), 0o600)
	if err := RewriteInPlace(p, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "{}\n" {
		t.Fatalf("content %q", b)
	}
	fi, _ := os.Stat(p)
	if err := RewriteInPlace(p, []byte(strings.Repeat("x", int(allocatedBytes(fi))+1))); !errors.Is(err, ErrNoRoomInPlace) {
		t.Fatalf("content past the blocks: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "{}\n" {
		t.Fatalf("a refused rewrite changed the file: %q", b)
	}
	if err := RewriteInPlace(filepath.Join(t.TempDir(), "none"), []byte("x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
	if !IsNoSpace(&os.PathError{Op: "write", Path: p, Err: syscall.ENOSPC}) {
		t.Fatal("ENOSPC is not no space")
	}
}
