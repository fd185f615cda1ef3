package tmuxtest

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// failTB records a failure or a skip and ends the goroutine, as the real
// ones do.
type failTB struct {
	testing.TB
	skipped, failed string
}

func (f *failTB) Helper() {}
func (f *failTB) Skipf(format string, args ...any) {
	f.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (f *failTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// In CI (TERMSPRAWL_REQUIRE_ALL) a machine without tmux fails the tests
// that need it instead of skipping them.
func TestNewWithoutTmuxFailsUnderRequireAll(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(testenv.RequireAllVar, "1")
	f := &failTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		New(f)
	}()
	<-done
	if f.failed == "" || f.skipped != "" || !strings.Contains(f.failed, "tmux is not installed") {
		t.Fatalf("New without tmux under %s: skipped %q, failed %q; want a failure", testenv.RequireAllVar, f.skipped, f.failed)
	}
}
