package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CheckStateDir applies EnsureStateDir's rules and creates nothing.
func TestCheckStateDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	if err := CheckStateDir(dir); err == nil {
		t.Fatal("a missing state dir passed")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("CheckStateDir created the directory")
	}
	if err := EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := CheckStateDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := CheckStateDir(dir); err == nil || !strings.Contains(err.Error(), "writable") {
		t.Fatalf("world-writable dir: %v", err)
	}
}
