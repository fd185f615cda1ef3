package tmuxtest

import (
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// In CI (TERMSPRAWL_REQUIRE_ALL) a machine without tmux fails the tests
// that need it instead of skipping them.
func TestNewWithoutTmuxFailsUnderRequireAll(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(testenv.RequireAllVar, "1")
	o := testenv.RunHelper(t, func(tb testing.TB) { New(tb) })
	if o.Failed == "" || o.Skipped != "" || !strings.Contains(o.Failed, "tmux is not installed") {
		t.Fatalf("New without tmux under %s: %+v; want a failure", testenv.RequireAllVar, o)
	}
}
