package cli

import (
	"slices"
	"strings"
	"testing"
)

// termsprawl alone opens the dashboard on a terminal and prints help
// without one; any argument keeps its meaning.
func TestDashArgs(t *testing.T) {
	old := onTerminal
	defer func() { onTerminal = old }()
	onTerminal = func() bool { return true }
	if got := dashArgs(nil); !slices.Equal(got, []string{"dash"}) {
		t.Errorf("on a terminal: %q, want [dash]", got)
	}
	if got := dashArgs([]string{"ls"}); !slices.Equal(got, []string{"ls"}) {
		t.Errorf("with a command: %q", got)
	}
	onTerminal = func() bool { return false }
	if got := dashArgs(nil); len(got) != 0 {
		t.Errorf("without a terminal: %q, want none", got)
	}
	code, out, errOut := runHuman(t)
	if code != ExitOK && code != ExitUsage || !strings.Contains(out+errOut, "dash") {
		t.Errorf("termsprawl alone without a terminal: exit %d, no help naming dash:\n%s%s", code, out, errOut)
	}
}
