package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// Detaching works nested (CONTRACT §26): the human's own tmux (a real
// outer server with a real client, itself in the pane of a "terminal"
// server) runs a shell, and in it `termsprawl attach work`. The attached
// client shows termsprawl's status line naming the node and the keys;
// the detach key (a root-table key, so no prefix reaches the outer tmux)
// ends the inner attach; the outer client stays attached and its pane is
// back at its shell.
func TestNestedDetachE2E(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	e.upWith()
	work := strings.TrimSpace(e.must(e.ts, "new", "--name", "work", "--", "bash", "--norc", "--noprofile"))

	outer := tmuxtest.New(t)
	// The outer server's shell, in a session no client sees yet.
	outer.Must("new-session", "-d", "-s", "o", "-x", "120", "-y", "30", "--",
		"env", "PS1=outer$ ", "TERMSPRAWL_HOME="+e.state, "TERMSPRAWL_TMUX_SOCKET="+e.tmux.Socket, "bash", "--norc", "--noprofile")
	// The human's terminal: a pane running a real client of the outer
	// server.
	term := tmuxtest.New(t)
	term.Must("new-session", "-d", "-s", "t", "-x", "120", "-y", "32", "--",
		"env", "-u", "TMUX", "tmux", "-L", outer.Socket, "-f", "/dev/null", "attach-session", "-t", "=o")
	screen := func() string { return term.Must("capture-pane", "-p", "-t", "t") }
	waitScreen := func(what string, ok func(string) bool) string {
		t.Helper()
		var s string
		testenv.Eventually(t, 30*time.Second, func() bool { s = screen(); return ok(s) },
			func() string { return fmt.Sprintf("the human's terminal never showed %s; it shows:\n%s", what, s) })
		return s
	}
	outerClients := func() string { return strings.TrimSpace(outer.Must("list-clients", "-F", "#{client_session}")) }
	waitScreen("the outer shell", func(s string) bool { return strings.Contains(s, "outer$") })
	if c := outerClients(); c != "o" {
		t.Fatalf("the outer tmux has clients %q, want one on o", c)
	}

	outer.Must("send-keys", "-t", "o", "-l", e.ts+" attach "+work)
	outer.Must("send-keys", "-t", "o", "Enter")
	status := "termsprawl · " + work + " · " + tools.DefaultDetachKey + " detach · " + tools.DefaultAnswerKey + " answer"
	waitScreen("termsprawl's status line", func(s string) bool { return strings.Contains(s, status) })
	e.tmux.Must("send-keys", "-t", "=ts-"+work+":", "-l", "echo inner-$((6*7))")
	e.tmux.Must("send-keys", "-t", "=ts-"+work+":", "Enter")
	waitScreen("the node's shell", func(s string) bool { return strings.Contains(s, "inner-42") })

	// The detach key, typed on the human's terminal.
	term.Must("send-keys", "-t", "t", tools.DefaultDetachKey)
	s := waitScreen("the outer shell again", func(s string) bool {
		return !strings.Contains(s, status) && strings.Contains(s, "[detached (from session ts-"+work+")]")
	})
	if c := outerClients(); c != "o" {
		t.Fatalf("after the detach key the outer tmux has clients %q, want its one client still on o; screen:\n%s", c, s)
	}
	testenv.Eventually(t, 20*time.Second, func() bool {
		return !strings.Contains(e.tmux.Must("list-clients", "-F", "#{client_control_mode}"), "0")
	}, func() string { return "the inner client is still attached:\n" + e.tmux.Must("list-clients") })
	// The outer pane takes input again: its shell runs a command.
	outer.Must("send-keys", "-t", "o", "-l", "echo back-$((6*7))")
	outer.Must("send-keys", "-t", "o", "Enter")
	waitScreen("the outer shell's answer", func(s string) bool { return strings.Contains(s, "back-42") })
}
