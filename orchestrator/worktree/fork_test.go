package worktree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CopyChanges brings a worktree's uncommitted changes (modified, staged,
// deleted, untracked, a symlink) into a worktree branched from its HEAD,
// not the ignored files, and leaves the source as it was.
func TestCopyChanges(t *testing.T) {
	repo, check := newRepo(t, "src repo")
	defer check()
	g := Git{}
	write(t, filepath.Join(repo, "gone"), "x\n")
	sh(t, repo, "git", "add", ".")
	sh(t, repo, "git", "commit", "-qm", "second")
	write(t, filepath.Join(repo, "README"), "one\nCHANGED\n")
	write(t, filepath.Join(repo, "staged"), "s\n")
	sh(t, repo, "git", "add", "staged")
	os.Remove(filepath.Join(repo, "gone"))
	write(t, filepath.Join(repo, "dir", "new"), "n\n")
	write(t, filepath.Join(repo, "x.log"), "ignored\n")
	os.Symlink("README", filepath.Join(repo, "ln"))
	status := sh(t, repo, "git", "status", "--porcelain")

	top, head, err := g.Head(ctx(t), filepath.Join(repo, "dir"))
	if err != nil || top != repo || len(head) != 40 {
		t.Fatalf("Head: %q %q %v", top, head, err)
	}
	in, err := g.Create(ctx(t), Spec{Dir: repo, Name: "fork-1", Base: head})
	if err != nil {
		t.Fatal(err)
	}
	n, err := g.CopyChanges(ctx(t), top, in.Path)
	if err != nil || n != 5 {
		t.Fatalf("CopyChanges: %d %v", n, err)
	}
	for path, want := range map[string]string{"README": "one\nCHANGED\n", "staged": "s\n", filepath.Join("dir", "new"): "n\n"} {
		if b, err := os.ReadFile(filepath.Join(in.Path, path)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v", path, b, err)
		}
	}
	for _, p := range []string{"gone", "x.log"} {
		if _, err := os.Lstat(filepath.Join(in.Path, p)); err == nil {
			t.Errorf("%s is in the fork", p)
		}
	}
	if l, err := os.Readlink(filepath.Join(in.Path, "ln")); err != nil || l != "README" {
		t.Errorf("ln: %q %v", l, err)
	}
	if got := sh(t, repo, "git", "status", "--porcelain"); got != status {
		t.Errorf("the source's status changed:\n%s\nwas\n%s", got, status)
	}
	if _, _, err := g.Head(ctx(t), t.TempDir()); err == nil || !strings.Contains(err.Error(), "not in a git repository") {
		t.Errorf("Head outside a repository: %v", err)
	}
}
