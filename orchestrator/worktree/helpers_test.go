package worktree

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitEnv gives the test its own HOME and git configuration, and returns a
// check that the configuration files are byte-identical at the end
// (apart from git's own worktree bookkeeping, which is not in them).
func gitEnv(t *testing.T) (home string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (apt-get install git)")
	}
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	os.Unsetenv("GIT_CONFIG_GLOBAL")
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	cfg := "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n[commit]\n\tgpgsign = false\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// sh runs a command in dir and fails the test when it fails.
func sh(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo makes a repository at dir/name with one commit on main and
// returns its path and a function that asserts the configuration files
// (the repository's and the user's) are unchanged.
func newRepo(t *testing.T, name string) (string, func()) {
	t.Helper()
	home := gitEnv(t)
	repo := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	sh(t, repo, "git", "init", "-q")
	write(t, filepath.Join(repo, "README"), "one\ntwo\nthree\n")
	write(t, filepath.Join(repo, ".gitignore"), ".env\n*.log\n")
	sh(t, repo, "git", "add", ".")
	sh(t, repo, "git", "commit", "-qm", "first")
	files := []string{filepath.Join(repo, ".git", "config"), filepath.Join(home, ".gitconfig")}
	before := make([][]byte, len(files))
	for i, f := range files {
		before[i], _ = os.ReadFile(f)
	}
	return repo, func() {
		t.Helper()
		for i, f := range files {
			after, _ := os.ReadFile(f)
			if !bytes.Equal(before[i], after) {
				t.Errorf("git configuration %s changed:\nbefore:\n%s\nafter:\n%s", f, before[i], after)
			}
		}
	}
}

func ctx(t *testing.T) context.Context {
	return t.Context()
}

func branches(t *testing.T, repo string) string {
	return sh(t, repo, "git", "branch", "--list", "--format=%(refname:short)")
}
