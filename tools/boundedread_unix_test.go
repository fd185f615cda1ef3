//go:build unix

package tools

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// mkfifo makes a FIFO at path, or skips the test.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		testenv.SkipOrFail(t, "cannot make a FIFO here: %v", err)
	}
}
