package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/trust"
)

// trustRepo is a git repository (own HOME) with a setup file.
func trustRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (apt-get install git)")
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(filepath.Join(repo, ".termsprawl"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".termsprawl", "worktree.json"), []byte("{\"setup\": [\"make\", \"deps\x1b[2K\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", repo, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	return repo
}

// `termsprawl trust DIR` and `termsprawl worktree trust DIR` approve the
// repository's files at their content and print them with their hashes;
// errors say the fix; --trust-setup approves before the launch; inside a
// node all of it is refused (issue 34 item 4).
func TestTrustCommand(t *testing.T) {
	fs := newFakeState(t)
	t.Setenv("TERMSPRAWL_HOME", fs.Dir)
	t.Setenv(SessionEnv, "")
	repo := trustRepo(t)
	content, _ := os.ReadFile(filepath.Join(repo, ".termsprawl", "worktree.json"))
	store := trust.Open(fs.Dir)

	// Inside a node: refused, nothing approved.
	t.Setenv(SessionEnv, fs.Agent)
	if code, _, errb := runHuman(t, "trust", repo); code != ExitNo || !strings.Contains(errb, "is the human's") {
		t.Fatalf("trust inside a node: exit %d %s", code, errb)
	}
	before := len(fs.Backend.Calls())
	if code, _, errb := runHuman(t, "new", "--worktree", "w", "--trust-setup", "--cwd", repo, "--", "sh"); code != ExitNo || !strings.Contains(errb, "is the human's") {
		t.Fatalf("new --trust-setup inside a node: exit %d %s", code, errb)
	}
	if len(fs.Backend.Calls()) != before || store.Check(repo, trust.WorktreeFile, content) {
		t.Fatal("approved or launched from inside a node")
	}
	t.Setenv(SessionEnv, "")

	code, out, errb := runHuman(t, "worktree", "trust", filepath.Join(repo, "sub"))
	if code != ExitOK || !strings.Contains(out, ".termsprawl/worktree.json  "+trust.Hash(content)) || !strings.Contains(out, "deps^[[2K") ||
		!strings.Contains(out, "termsprawl trust") || rawControl(out) != "" {
		t.Fatalf("worktree trust: exit %d\n%s%s", code, out, errb)
	}
	if !store.Check(repo, trust.WorktreeFile, content) {
		t.Fatal("not approved")
	}
	// Changed: not approved any more until trusted again.
	if err := os.WriteFile(filepath.Join(repo, ".termsprawl", "worktree.json"), []byte(`{"setup": ["make"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, _ := os.ReadFile(filepath.Join(repo, ".termsprawl", "worktree.json"))
	if store.Check(repo, trust.WorktreeFile, changed) {
		t.Fatal("a changed file counts as approved")
	}
	if code, out, errb := runHuman(t, "trust", repo); code != ExitOK || !strings.Contains(out, trust.Hash(changed)) {
		t.Fatalf("trust: exit %d\n%s%s", code, out, errb)
	}

	// Errors with the fix.
	if code, _, errb := runHuman(t, "trust", t.TempDir()); code != ExitNo || !strings.Contains(errb, "nothing to approve") {
		t.Fatalf("trust of a directory without files: exit %d %s", code, errb)
	}
	if code, _, errb := runHuman(t, "trust", filepath.Join(repo, "nope")); code != ExitUsage || !strings.Contains(errb, "not a directory") {
		t.Fatalf("trust of nothing: exit %d %s", code, errb)
	}

	// --trust-setup: approved first (said on stderr), then launched.
	if err := os.WriteFile(filepath.Join(repo, ".termsprawl", "worktree.json"), []byte(`{"setup": ["make", "again"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(repo, ".termsprawl", "worktree.json"))
	before = len(fs.Backend.Calls())
	_, out, errb = runHuman(t, "new", "--worktree", "w", "--trust-setup", "--cwd", repo, "--", "sh")
	if !store.Check(repo, trust.WorktreeFile, again) || strings.Contains(out, "approved") || !strings.Contains(errb, "approved for") {
		t.Fatalf("new --trust-setup did not approve first:\n%s%s", out, errb)
	}
	calls := fs.Backend.Calls()[before:]
	if len(calls) == 0 || calls[0].Op != "terminal_launch" || strings.Contains(string(calls[0].Args), "trust") {
		t.Fatalf("the launch: %+v", calls)
	}
	if code, _, errb := runHuman(t, "new", "--trust-setup", "--", "sh"); code != ExitUsage || !strings.Contains(errb, "--trust-setup go with --worktree") {
		t.Fatalf("--trust-setup without --worktree: exit %d %s", code, errb)
	}
}
