package worktree

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Commits made on a detached HEAD are in no branch: finish and prune
// refuse naming them, the worktree stays, worktrees does not call it
// merged (issue 34 item 5).
func TestFinishRefusesCommitsOnADetachedHead(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	in := made(t, repo, "det")
	sh(t, in.Path, "git", "checkout", "-q", "--detach")
	write(t, filepath.Join(in.Path, "lost.txt"), "work\n")
	sh(t, in.Path, "git", "add", "lost.txt")
	sh(t, in.Path, "git", "commit", "-qm", "work on a detached head")
	oneline := strings.TrimSpace(sh(t, in.Path, "git", "log", "--oneline", "--no-decorate", "-1"))
	var g Git
	for _, mode := range []string{FinishMerge, FinishPush} {
		_, err := g.Finish(ctx(t), in, mode, false, nil)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), oneline) || !strings.Contains(err.Error(), "switch -c") {
			t.Fatalf("%s with a commit on a detached HEAD: %v", mode, err)
		}
	}
	if _, err := g.Finish(ctx(t), in, FinishMerge, true, nil); err == nil {
		t.Fatal("--discard removed a worktree holding commits in no branch")
	}
	if _, err := os.Stat(filepath.Join(in.Path, "lost.txt")); err != nil {
		t.Fatal("the worktree is gone")
	}
	st, err := g.StatusOf(ctx(t), in)
	if err != nil {
		t.Fatal(err)
	}
	if st.Merged || !st.Detached || len(st.Stray) != 1 || st.Stray[0] != oneline || st.Ahead != 1 {
		t.Fatalf("status %+v", st)
	}
	if ok, why, err := g.Prunable(ctx(t), in); ok || err != nil || !strings.Contains(why, oneline) {
		t.Fatalf("prunable %v %q %v", ok, why, err)
	}
	// Put on a branch, it is no longer stray; back on its branch, the
	// detached HEAD is gone too, and finish merges.
	sh(t, in.Path, "git", "branch", "keep-it", "HEAD")
	if _, err := g.Finish(ctx(t), in, FinishMerge, false, nil); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "detached HEAD") {
		t.Fatalf("a detached HEAD with no stray commits: %v", err)
	}
	sh(t, in.Path, "git", "switch", "-q", in.Branch)
	if out, err := g.Finish(ctx(t), in, FinishMerge, false, nil); err != nil || !out.Removed {
		t.Fatalf("finish on its branch: %+v %v", out, err)
	}
	if !strings.Contains(sh(t, repo, "git", "log", "--oneline", "keep-it"), "work on a detached head") {
		t.Fatal("the commit is lost")
	}
}

// --discard throws away only what the refusal listed: a path that
// appeared since is refused again and stays (issue 34 item 7).
func TestDiscardOnlyWhatWasListed(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	in := made(t, repo, "listed")
	write(t, filepath.Join(in.Path, "first.txt"), "1\n")
	var g Git
	_, err := g.Finish(ctx(t), in, FinishMerge, false, nil)
	var dirty *DirtyError
	if !errors.As(err, &dirty) || strings.Join(dirty.Paths, ",") != "first.txt" {
		t.Fatalf("refusal %v", err)
	}
	write(t, filepath.Join(in.Path, "later.txt"), "written after the refusal\n")
	_, err = g.Finish(ctx(t), in, FinishMerge, true, dirty.Paths)
	if !errors.As(err, &dirty) || !strings.Contains(err.Error(), "later.txt appeared since") {
		t.Fatalf("discard with a later path: %v", err)
	}
	for _, f := range []string{"first.txt", "later.txt"} {
		if _, err := os.Stat(filepath.Join(in.Path, f)); err != nil {
			t.Fatalf("%s was thrown away", f)
		}
	}
	out, err := g.Finish(ctx(t), in, FinishMerge, true, dirty.Paths)
	if err != nil || !out.Removed || strings.Join(out.Discarded, ",") != "first.txt,later.txt" {
		t.Fatalf("discard of what was listed: %+v %v", out, err)
	}
}

// An ignored file .worktreeinclude gave the worktree and that was edited
// there (.env) is named before the worktree goes (issue 34 item 7).
func TestFinishNamesAnEditedIncludedFile(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	write(t, filepath.Join(repo, ".worktreeinclude"), ".env\n")
	write(t, filepath.Join(repo, ".env"), "TOKEN=main\n")
	in := made(t, repo, "env")
	var g Git
	if _, err := g.CopyIncluded(ctx(t), in, CopyLimits{}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(in.Path, ".env"), "TOKEN=rotated-by-the-agent\n")
	_, err := g.Finish(ctx(t), in, FinishMerge, false, nil)
	var dirty *DirtyError
	if !errors.As(err, &dirty) || strings.Join(dirty.Paths, ",") != ".env" || !strings.Contains(err.Error(), ".env") {
		t.Fatalf("finish with an edited .env: %v", err)
	}
	out, err := g.Finish(ctx(t), in, FinishMerge, true, dirty.Paths)
	if err != nil || !out.Removed || strings.Join(out.Discarded, ",") != ".env" {
		t.Fatalf("discard: %+v %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, ".env")); string(b) != "TOKEN=main\n" {
		t.Fatalf("the main worktree's .env: %q", b)
	}
}

// A new file larger than what a diff reads of it: the insertion count
// is marked cut (issue 34 item 7).
func TestDiffStatMarksABigNewFileCut(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	in := made(t, repo, "big")
	write(t, filepath.Join(in.Path, "big.txt"), strings.Repeat("a line of text\n", 200000)) // 3 MB
	d, err := Git{}.DiffOf(ctx(t), in, -1)
	if err != nil {
		t.Fatal(err)
	}
	if d.Insertions >= 200000 || !strings.Contains(d.Cut, "big.txt") || !strings.Contains(d.Cut, "counted in its first") {
		t.Fatalf("%d insertions, cut %q", d.Insertions, d.Cut)
	}
}
