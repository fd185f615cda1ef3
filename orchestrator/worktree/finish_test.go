package worktree

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func made(t *testing.T, repo, name string) Info {
	t.Helper()
	in, err := Git{}.Create(ctx(t), Spec{Dir: repo, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestDiffHasTrackedNewAndCommittedChanges(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	in := made(t, repo, "d")
	var g Git
	write(t, filepath.Join(in.Path, "committed.txt"), "c1\nc2\n")
	sh(t, in.Path, "git", "add", "committed.txt")
	sh(t, in.Path, "git", "commit", "-qm", "agent commit")
	write(t, filepath.Join(in.Path, "README"), "one\nTWO\nthree\n")
	write(t, filepath.Join(in.Path, "new.txt"), "brand\nnew\nfile\n")
	write(t, filepath.Join(in.Path, "x.log"), "ignored\n")
	d, err := g.DiffOf(ctx(t), in, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Files != 3 || d.Insertions != 2+1+3 || d.Deletions != 1 || d.Cut != "" {
		t.Fatalf("stats %d files +%d -%d cut %q, want 3 files +6 -1:\n%s", d.Files, d.Insertions, d.Deletions, d.Cut, d.Text)
	}
	for _, want := range []string{"+++ b/committed.txt", "-two", "+TWO", "+++ b/new.txt", "+brand"} {
		if !strings.Contains(d.Text, want) {
			t.Fatalf("diff lacks %q:\n%s", want, d.Text)
		}
	}
	if strings.Contains(d.Text, "x.log") {
		t.Fatal("an ignored file is in the diff")
	}
	// No git add on the tree: the index still has no new.txt.
	if out := sh(t, in.Path, "git", "ls-files", "new.txt"); out != "" {
		t.Fatal("the diff added new.txt to the index")
	}
	cut, err := g.DiffOf(ctx(t), in, 100)
	if err != nil || len(cut.Text) > 100 || !strings.Contains(cut.Cut, "cut at 100 bytes") || cut.Files != 3 {
		t.Fatalf("bounded diff: %d bytes, cut %q, %d files, %v", len(cut.Text), cut.Cut, cut.Files, err)
	}
}

func TestFinishRefusesADirtyTreeNamingTheFiles(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	in := made(t, repo, "dirty")
	write(t, filepath.Join(in.Path, "README"), "changed\n")
	write(t, filepath.Join(in.Path, "fresh.txt"), "new\n")
	write(t, filepath.Join(in.Path, "keep*"), "a file named like a pattern\n")
	sh(t, in.Path, "git", "add", "keep*")
	var g Git
	for _, mode := range []string{FinishMerge, FinishPush} {
		_, err := g.Finish(ctx(t), in, mode, false, nil)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "README") || !strings.Contains(err.Error(), "fresh.txt") || !strings.Contains(err.Error(), "--discard") {
			t.Fatalf("%s on a dirty tree: %v", mode, err)
		}
	}
	if _, err := os.Stat(filepath.Join(in.Path, "fresh.txt")); err != nil {
		t.Fatal("a refused finish touched the tree")
	}
	out, err := g.Finish(ctx(t), in, FinishMerge, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Removed || !out.BranchDeleted || len(out.Discarded) != 3 {
		t.Fatalf("discard then merge: %+v", out)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "README")); string(b) != "one\ntwo\nthree\n" {
		t.Fatalf("discarded change reached the main worktree: %q", b)
	}
}

func TestFinishMergeMergesRemovesAndDeletesTheBranch(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	in := made(t, repo, "m")
	write(t, filepath.Join(in.Path, "feature.txt"), "f\n")
	sh(t, in.Path, "git", "add", "feature.txt")
	sh(t, in.Path, "git", "commit", "-qm", "feature")
	write(t, filepath.Join(repo, "untracked-in-main.txt"), "the user's\n") // untracked files in main do not block
	out, err := Git{}.Finish(ctx(t), in, FinishMerge, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Merged || !out.Removed || !out.BranchDeleted {
		t.Fatalf("outcome %+v", out)
	}
	if _, err := os.Stat(filepath.Join(repo, "feature.txt")); err != nil {
		t.Fatal("the merge did not reach the main worktree")
	}
	if _, err := os.Stat(in.Path); err == nil {
		t.Fatal("worktree not removed")
	}
	if strings.Contains(branches(t, repo), "termsprawl/m") {
		t.Fatal("merged branch not deleted")
	}
}

func TestFinishMergeRefusesADirtyOrElsewhereMainWorktree(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	in := made(t, repo, "m")
	write(t, filepath.Join(in.Path, "feature.txt"), "f\n")
	sh(t, in.Path, "git", "add", "feature.txt")
	sh(t, in.Path, "git", "commit", "-qm", "feature")
	var g Git
	write(t, filepath.Join(repo, "README"), "user's edit\n")
	_, err := g.Finish(ctx(t), in, FinishMerge, false, nil)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "uncommitted changes (README)") {
		t.Fatalf("dirty main: %v", err)
	}
	sh(t, repo, "git", "checkout", "-q", "--", "README")
	sh(t, repo, "git", "switch", "-q", "-c", "other")
	_, err = g.Finish(ctx(t), in, FinishMerge, false, nil)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "is on other, not on main") {
		t.Fatalf("main on another branch: %v", err)
	}
	if _, err := os.Stat(in.Path); err != nil || !strings.Contains(branches(t, repo), "termsprawl/m") {
		t.Fatal("a refused merge removed something")
	}
}

func TestFinishPushToABareRemote(t *testing.T) {
	repo, _ := newRepo(t, "r") // its config changes by the test's remote add: compared below
	bare := filepath.Join(t.TempDir(), "remote.git")
	sh(t, repo, "git", "init", "-q", "--bare", bare)
	sh(t, repo, "git", "remote", "add", "origin", bare)
	cfgWithRemote, _ := os.ReadFile(filepath.Join(repo, ".git", "config"))
	in := made(t, repo, "p")
	write(t, filepath.Join(in.Path, "work.txt"), "w\n")
	sh(t, in.Path, "git", "add", "work.txt")
	sh(t, in.Path, "git", "commit", "-qm", "work")
	head := strings.TrimSpace(sh(t, in.Path, "git", "rev-parse", "HEAD"))
	out, err := Git{}.Finish(ctx(t), in, FinishPush, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Pushed != "origin/termsprawl/p" || !out.Removed || out.BranchDeleted || out.Merged {
		t.Fatalf("outcome %+v", out)
	}
	if got := strings.TrimSpace(sh(t, bare, "git", "rev-parse", "refs/heads/termsprawl/p")); got != head {
		t.Fatalf("remote has %s, want %s", got, head)
	}
	if !strings.Contains(branches(t, repo), "termsprawl/p") {
		t.Fatal("the unmerged branch was deleted")
	}
	if after, _ := os.ReadFile(filepath.Join(repo, ".git", "config")); string(after) != string(cfgWithRemote) {
		t.Fatalf("push wrote configuration:\n%s", after)
	}
}

func TestSquashMergedCountsAsUnmergedAndIsKept(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	in := made(t, repo, "sq")
	write(t, filepath.Join(in.Path, "s.txt"), "s\n")
	sh(t, in.Path, "git", "add", "s.txt")
	sh(t, in.Path, "git", "commit", "-qm", "s")
	sh(t, repo, "git", "merge", "-q", "--squash", "termsprawl/sq")
	sh(t, repo, "git", "commit", "-qm", "squashed")
	var g Git
	st, err := g.StatusOf(ctx(t), in)
	if err != nil || st.Merged || !st.Squash {
		t.Fatalf("status %+v %v, want squash-merged, not merged", st, err)
	}
	_, err = g.Finish(ctx(t), in, FinishMerge, false, nil)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "squash-merged") || !strings.Contains(err.Error(), "keeps it") {
		t.Fatalf("finish of a squash-merged branch: %v", err)
	}
	ok, why, err := g.Prunable(ctx(t), in)
	if ok || !strings.Contains(why, "squash") || err != nil {
		t.Fatalf("prunable %v %q %v", ok, why, err)
	}
	if _, err := os.Stat(in.Path); err != nil || !strings.Contains(branches(t, repo), "termsprawl/sq") {
		t.Fatal("squash-merged work was removed")
	}
}

func TestPruneOnlyCleanAndMerged(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	var g Git
	merged := made(t, repo, "merged") // at base: merged
	dirty := made(t, repo, "dirty")   // at base but dirty
	ahead := made(t, repo, "ahead")   // a commit not in base
	write(t, filepath.Join(dirty.Path, "wip.txt"), "wip\n")
	write(t, filepath.Join(ahead.Path, "a.txt"), "a\n")
	sh(t, ahead.Path, "git", "add", "a.txt")
	sh(t, ahead.Path, "git", "commit", "-qm", "a")
	for _, c := range []struct {
		in   Info
		ok   bool
		want string
	}{{merged, true, ""}, {dirty, false, "wip.txt"}, {ahead, false, "not merged (1 commits ahead"}} {
		ok, why, err := g.Prunable(ctx(t), c.in)
		if err != nil || ok != c.ok || !strings.Contains(why, c.want) {
			t.Fatalf("%s: prunable %v %q %v", c.in.Name, ok, why, err)
		}
	}
	out, err := g.Remove(ctx(t), merged)
	if err != nil || !out.Removed || !out.BranchDeleted {
		t.Fatalf("remove: %+v %v", out, err)
	}
	// git branch -d refuses the unmerged one: Remove never forces.
	if _, err := g.write(ctx(t), repo, "branch", "-d", "termsprawl/ahead"); err == nil {
		t.Fatal("git branch -d deleted an unmerged branch")
	}
}

func TestKeepRemovesNothing(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	in := made(t, repo, "k")
	write(t, filepath.Join(in.Path, "wip.txt"), "wip\n")
	out, err := Git{}.Finish(ctx(t), in, FinishKeep, false, nil)
	if err != nil || out.Removed || out.BranchDeleted {
		t.Fatalf("keep: %+v %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(in.Path, "wip.txt")); err != nil {
		t.Fatal(err)
	}
}

func TestSubmodulesOnlyWhenAsked(t *testing.T) {
	repo, _ := newRepo(t, "super") // its config changes by the test's submodule add: compared below
	sub := filepath.Join(t.TempDir(), "sub")
	sh(t, t.TempDir(), "git", "init", "-q", sub)
	write(t, filepath.Join(sub, "lib.txt"), "lib\n")
	sh(t, sub, "git", "add", ".")
	sh(t, sub, "git", "commit", "-qm", "lib")
	sh(t, repo, "git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "lib")
	sh(t, repo, "git", "commit", "-qm", "add submodule")
	cfg, _ := os.ReadFile(filepath.Join(repo, ".git", "config"))
	var g Git
	plain := made(t, repo, "plain")
	if _, err := os.Stat(filepath.Join(plain.Path, "lib", "lib.txt")); err == nil {
		t.Fatal("a submodule was initialized unasked")
	}
	with := made(t, repo, "with")
	if err := g.InitSubmodules(ctx(t), with); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(with.Path, "lib", "lib.txt")); err != nil || string(b) != "lib\n" {
		t.Fatalf("submodule not checked out: %q %v", b, err)
	}
	if after, _ := os.ReadFile(filepath.Join(repo, ".git", "config")); string(after) != string(cfg) {
		t.Fatalf("initializing submodules wrote the repository's configuration:\nbefore:\n%s\nafter:\n%s", cfg, after)
	}
}
