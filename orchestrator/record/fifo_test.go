//go:build unix

package record

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

// A recording directory whose session.cast (or meta.json, or
// events.jsonl) is a FIFO answers an error at once: the open never waits
// for a writer.
func TestOpenFIFOInTraceDir(t *testing.T) {
	t.Parallel()
	for _, name := range []string{CastFile, MetaFile, EventsFile} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if name != CastFile {
				os.WriteFile(filepath.Join(dir, CastFile), []byte(`{"version":2,"width":80,"height":24}`+"\n"), 0o600)
			}
			fifo := filepath.Join(dir, name)
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				testenv.SkipOrFail(t, "cannot make a FIFO: %v", err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := Open(dir)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || tools.KindOf(err) != tools.KindUsage || !strings.Contains(err.Error(), "not a regular file") {
					t.Fatalf("Open: %v, want usage: not a regular file", err)
				}
			case <-time.After(10 * time.Second):
				// Free the stuck open so the test ends.
				if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
				<-done
				t.Fatalf("Open blocked on a FIFO %s", name)
			}
		})
	}
}
