package tmuxctl_test

import (
	"testing"

	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tmuxctl"
)

// A client behind a prefix that re-parses its words with a shell (as ssh
// does) reaches the same server and sees the same pane.
func TestStartBehindShellPrefix(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	cfg := tmuxctl.Config{Prefix: []string{"sh", "-c", `eval "exec $*"`, "sh"}, ShellQuote: true}
	c := startSession(t, srv, "a b", cfg, "sleep", "60")
	out, err := c.Run(ctx10(t), tmuxctl.Command("display-message", "-p", "#{session_name}|#{pane_width}"))
	if err != nil || len(out) != 1 || out[0] != "a b|80" {
		t.Fatalf("display through the prefix = %q, %v", out, err)
	}
}
