package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// git diff --stat's lines and totals, in the singular where it is one
// (issue 39).
func TestDiffStatText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		files, ins, del int
		want            string
	}{
		{1, 1, 0, "1 file changed, 1 insertion(+)"},
		{2, 2, 1, "2 files changed, 2 insertions(+), 1 deletion(-)"},
		{1, 0, 3, "1 file changed, 3 deletions(-)"},
		{0, 0, 0, "0 files changed, 0 insertions(+), 0 deletions(-)"},
	} {
		if got := statSummary(c.files, c.ins, c.del); got != c.want {
			t.Errorf("statSummary(%d, %d, %d) = %q, want %q", c.files, c.ins, c.del, got, c.want)
		}
	}
	var b bytes.Buffer
	printStat(&b, []tools.WorktreeFileStat{
		{Path: "src/main.go", Insertions: 80, Deletions: 40},
		{Path: "a", Insertions: 1},
		{Path: "logo.png", Binary: true},
		{Path: "evil\x1b[2Jname", Deletions: 2},
	})
	got := b.String()
	for _, want := range []string{
		" src/main.go   | 120 " + strings.Repeat("+", 26) + strings.Repeat("-", 13) + "\n",
		" a             |   1 +\n",
		" logo.png      | Bin\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("printStat lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("printStat printed an escape from a file name:\n%q", got)
	}
}

// doctor's mirror counters in words a new user understands.
func TestMirrorsText(t *testing.T) {
	t.Parallel()
	if got := mirrorsText(6, 0); !strings.Contains(got, "read them again from tmux 6 times") || !strings.Contains(got, "never found a copy that differed") {
		t.Errorf("mirrorsText(6, 0) = %q", got)
	}
	if got := mirrorsText(1, 1); !strings.Contains(got, "once") || !strings.Contains(got, "corrected a copy that differed from tmux once") {
		t.Errorf("mirrorsText(1, 1) = %q", got)
	}
}

// attach without a terminal says so in its own words, not tmux's "open
// terminal failed: not a terminal", and execs nothing.
func TestAttachWithoutTerminal(t *testing.T) {
	fs := newFakeState(t)
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		return tools.OKResult(tools.NodeList{Terminals: []tools.NodeInfo{{Terminal: "n1", Status: "running"}}})
	})
	old, oldTerm := execFn, stdinIsTerminal
	execFn = func(string, []string, []string) error { t.Fatal("attach ran tmux without a terminal"); return nil }
	stdinIsTerminal = func() bool { return false }
	defer func() { execFn, stdinIsTerminal = old, oldTerm }()
	code, _, errb := runHuman(t, "--state-dir", fs.Dir, "attach", "n1")
	if code != ExitUsage || !strings.Contains(errb, "attach needs a terminal") || !strings.Contains(errb, "termsprawl snapshot n1") {
		t.Fatalf("exit %d: %s", code, errb)
	}
}

// API words in the CLI's messages become the CLI's, once.
func TestHumanWordsOnce(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`terminal "a" is running, not lost: terminal_close (termsprawl kill) ends a node that runs`:                   "node \"a\" is running, not lost: `termsprawl kill` ends a node that runs",
		`node "x" is not an agent: it has no agent state (see agent_status)`:                                          "node \"x\" is not an agent: it has no agent state (`termsprawl ls` lists them)",
		`node "x" has no worktree: launch with --worktree (worktree {} on terminal_launch / agent_launch) to get one`: `node "x" has no worktree: launch with --worktree (termsprawl new|agent --worktree NAME) to get one`,
		`terminal_launch: argument "sandbox" must be one of workspace, guard, none, got "bogus"`:                      `--sandbox must be one of workspace, guard, none, got "bogus"`,
		`agent_launch: argument "policy" is 300 bytes, over the limit`:                                                `--policy is 300 bytes, over the limit`,
		`argument "text" contains a NUL byte`:                                                                         `argument "text" contains a NUL byte`,
	} {
		if got := humanize(in); got != want {
			t.Errorf("humanize(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}
