package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// TestE2EWorktrees drives the worktree commands of the real binaries
// (CONTRACT §21): --worktree on new, its refusals, diff, review, finish
// refused on a dirty tree, worktrees, and down --all keeping unpushed
// work; the user's git configuration is byte-identical afterwards.
func TestE2EWorktrees(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	repo, home, git := e2eRepo(t, e)
	cfgs := []string{filepath.Join(repo, ".git", "config"), filepath.Join(home, ".gitconfig")}
	var before [][]byte
	for _, f := range cfgs {
		b, _ := os.ReadFile(f)
		before = append(before, b)
	}
	up, _ := e.up()

	expect := func(want int, text string, args ...string) string {
		t.Helper()
		code, out, errb := e.run(e.ts, args...)
		if code != want || !strings.Contains(out+errb, text) {
			t.Fatalf("termsprawl %v: exit %d (want %d), output lacks %q:\n%s%s", args, code, want, text, out, errb)
		}
		return out
	}
	notRepo := t.TempDir()
	expect(ExitNo, "not in a git repository", "new", "--cwd", notRepo, "--worktree", "--", "cat")
	expect(ExitNo, "not a valid branch name", "new", "--cwd", repo, "--worktree", "a..b", "--", "cat")
	expect(ExitNo, "is not a commit", "new", "--cwd", repo, "--worktree", "x", "--base", "nope", "--", "cat")
	expect(ExitUsage, "go with --worktree", "new", "--cwd", repo, "--base", "main", "--", "cat")
	if out := git(repo, "branch", "--list"); strings.Contains(out, "termsprawl/") {
		t.Fatalf("refusals made branches:\n%s", out)
	}

	id := strings.TrimSpace(expect(ExitOK, "", "new", "--cwd", repo, "--name", "fixer", "--worktree", "fix", "--", "bash", "--norc", "--noprofile"))
	wt := filepath.Join(filepath.Dir(repo), "app repo.worktrees", "fix")
	e.submit(e.oper, id, "pwd", wt)
	os.WriteFile(filepath.Join(wt, "done.txt"), []byte("done\n"), 0o644)
	git(wt, "add", "done.txt")
	git(wt, "commit", "-qm", "unpushed work")
	os.WriteFile(filepath.Join(wt, "README"), []byte("one\nTWO\n"), 0o644)

	if out := expect(ExitOK, "+TWO", "diff", "fixer"); !strings.Contains(out, "+++ b/done.txt") {
		t.Fatalf("diff lacks the commit:\n%s", out)
	}
	// --stat: a line per file and git's totals (issue 39).
	stat := expect(ExitOK, "2 files changed, 2 insertions(+), 1 deletion(-)", "diff", "fixer", "--stat")
	for _, line := range []string{" README   | 2 +-\n", " done.txt | 1 +\n"} {
		if !strings.Contains(stat, line) {
			t.Fatalf("diff --stat lacks %q:\n%s", line, stat)
		}
	}
	expect(ExitOK, "no comments pending for fixer", "review", "fixer")
	expect(ExitOK, "1 comment pending", "review", "fixer", "README:2", "why", "capitals?")
	expect(ExitOK, "README:2  why capitals?", "review", "fixer")
	expect(ExitUsage, "FILE:LINE", "review", "fixer", "README", "no line")
	expect(ExitNo, "no agent", "review", "fixer", "--send")
	expect(ExitUsage, "--merge, --push or --keep", "finish", "fixer")
	expect(ExitNo, "README", "finish", "fixer", "--merge")
	out := expect(ExitOK, "termsprawl/fix", "worktrees")
	if !strings.Contains(out, "yes") {
		t.Fatalf("worktrees does not show it dirty:\n%s", out)
	}

	// down --all ends every node; the worktree and its commit stay.
	e.must(e.ts, "down", "--all")
	up.waitExit(15 * time.Second)
	if got := git(wt, "log", "-1", "--format=%s"); strings.TrimSpace(got) != "unpushed work" {
		t.Fatalf("after down --all the worktree's head is %q", got)
	}
	e.up()
	var l tools.WorktreeList
	if err := json.Unmarshal([]byte(expect(ExitOK, "", "worktrees", "--json")), &l); err != nil || len(l.Worktrees) != 1 || l.Worktrees[0].Node != "" || l.Worktrees[0].Ahead != 1 {
		t.Fatalf("worktrees after a restart: %+v %v", l, err)
	}
	expect(ExitOK, "kept "+wt+": uncommitted changes", "worktrees", "prune")
	for i, f := range cfgs {
		if b, _ := os.ReadFile(f); !bytes.Equal(b, before[i]) {
			t.Errorf("git configuration %s changed:\n%s", f, b)
		}
	}
}

// e2eRepo makes a git repository "app repo" with one commit, under a HOME
// of its own that e's commands get too; git runs git in a directory.
func e2eRepo(t *testing.T, e *e2e) (repo, home string, git func(dir string, args ...string) string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (apt-get install git)")
	}
	home = t.TempDir()
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644)
	e.env = append(e.env, "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
	git = func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, e.env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	repo = filepath.Join(t.TempDir(), "app repo")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "README"), []byte("one\ntwo\n"), 0o644)
	git(repo, "init", "-q")
	git(repo, "add", ".")
	git(repo, "commit", "-qm", "first")
	return repo, home, git
}
