//go:build unix

package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestLockDirExcludes(t *testing.T) {
	t.Parallel()
	d := t.TempDir()
	unlock, err := lockDir(d)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(d, ".lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("a second lock while the first is held: %v, want EWOULDBLOCK", err)
	}
	unlock()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
}
