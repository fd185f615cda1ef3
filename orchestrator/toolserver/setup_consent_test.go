package toolserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// A repository's setup runs only after the human approved that file's
// content for that repository; the program starts either way, and the
// node says why the setup did not run and the command to run. A changed
// file needs approving again. An agent's launch cannot approve: the API
// has no such argument (CONTRACT §26, issue 34 item 4).
func TestWorktreeSetupNeedsTheHumansApproval(t *testing.T) {
	t.Parallel()
	repo, same := wtRepo(t, func(repo string) {
		wtWrite(t, filepath.Join(repo, ".termsprawl", "worktree.json"), `{"setup": ["sh", "-c", "touch SETUP-MADE; echo SETUP-RAN"]}`)
		wtGit(t, repo, "commit", "-qam", "a setup that leaves a mark")
	})
	defer same()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()

	a, _ := wtLaunch(t, op, repo, "first", apiM{"branch": "first"})
	scr := apiWaitScreen(t, op, a.Terminal, "--trust-setup)\n>")
	if !strings.Contains(scr, "setup not run") || !strings.Contains(scr, "termsprawl trust") || strings.Contains(scr, "SETUP-RAN") {
		t.Fatalf("an unapproved setup:\n%s", scr)
	}
	wt := filepath.Join(filepath.Dir(repo), "my repo.worktrees")
	if _, err := os.Stat(filepath.Join(wt, "first", "SETUP-MADE")); err == nil {
		t.Fatal("the unapproved setup ran")
	}

	// An agent asks to approve it: refused, as any unknown argument.
	agent, _ := wtLaunch(t, op, repo, "agent", apiM{"branch": "agentwt"})
	res := apiFail(t, s.session(agent.Terminal), "agent_launch", apiM{"agent": "custom", "command": []string{"sh"}, "cwd": repo,
		"worktree": apiM{"branch": "sneaky", "trust_setup": true}}, tools.KindUsage)
	if !strings.Contains(res.Error, "trust_setup") {
		t.Fatalf("trust_setup from an agent: %s", res.Error)
	}

	// The human approves: the next launch runs it.
	wtApprove(t, dir, repo)
	b, _ := wtLaunch(t, op, repo, "second", apiM{"branch": "second"})
	apiWaitScreen(t, op, b.Terminal, "SETUP-RAN")
	if _, err := os.Stat(filepath.Join(wt, "second", "SETUP-MADE")); err != nil {
		t.Fatalf("the approved setup did not run: %v", err)
	}

	// The file changes (a pull): not run until approved again.
	wtWrite(t, filepath.Join(repo, ".termsprawl", "worktree.json"), `{"setup": ["sh", "-c", "touch SETUP-MADE; echo SETUP-RAN; echo changed"]}`)
	wtGit(t, repo, "commit", "-qam", "changed setup")
	c, _ := wtLaunch(t, op, repo, "third", apiM{"branch": "third"})
	if scr := apiWaitScreen(t, op, c.Terminal, "--trust-setup)\n>"); !strings.Contains(scr, "setup not run") || strings.Contains(scr, "SETUP-RAN") {
		t.Fatalf("a changed setup:\n%s", scr)
	}
}
