package dash

import (
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// The row's kind column carries the sandbox (CONTRACT §27): an
// unsandboxed agent stands out with "!", guard is marked, workspace and
// the human's shells are plain.
func TestSandboxMark(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		agent, sandbox, want string
	}{
		{"claude", "workspace", ""},
		{"claude", "guard", "◇"},
		{"claude", "none", "!"},
		{"", "none", ""},
		{"", "guard", "◇"},
		{"", "workspace", ""},
	} {
		n := tools.StreamNode{NodeInfo: tools.NodeInfo{Agent: c.agent, Sandbox: c.sandbox}}
		if got := sandboxMark(n); got != c.want {
			t.Errorf("agent %q sandbox %q: mark %q, want %q", c.agent, c.sandbox, got, c.want)
		}
	}
}
