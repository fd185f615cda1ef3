//go:build unix

package tools

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

// OpenRegular refuses a FIFO at once (no writer needed) and opens a
// regular file.
func TestOpenRegular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	done := make(chan error, 1)
	go func() {
		f, _, err := OpenRegular(fifo)
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegularFile) || !strings.Contains(err.Error(), "FIFO") {
			t.Fatalf("a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatal("OpenRegular blocked on a FIFO")
	}
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("abc"), 0o600)
	f, fi, err := OpenRegular(p)
	if err != nil || fi.Size() != 3 {
		t.Fatalf("a regular file: %v %v", fi, err)
	}
	f.Close()
	if _, _, err := OpenRegular(dir); !errors.Is(err, ErrNotRegularFile) {
		t.Fatalf("a directory: %v", err)
	}
}
