package worktree

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCreateMakesABranchOutsideTheRepository(t *testing.T) {
	repo, same := newRepo(t, "my repo") // a path with a space
	defer same()
	var g Git
	in, err := g.Create(ctx(t), Spec{Dir: repo, Name: "fix-1"})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(filepath.Dir(repo), "my repo.worktrees", "fix-1")
	if in.Path != want || in.Branch != "termsprawl/fix-1" || in.Base != "main" || in.Repo != repo {
		t.Fatalf("info %+v, want path %s on termsprawl/fix-1 from main", in, want)
	}
	if got := strings.TrimSpace(sh(t, in.Path, "git", "branch", "--show-current")); got != "termsprawl/fix-1" {
		t.Fatalf("worktree is on %q", got)
	}
	if _, err := os.Stat(filepath.Join(in.Path, "README")); err != nil {
		t.Fatal(err)
	}
	// From a subdirectory of a worktree too: the same main worktree.
	main, err := g.MainWorktree(ctx(t), in.Path)
	if err != nil || main != repo {
		t.Fatalf("main worktree from the worktree: %q %v", main, err)
	}
}

func TestCreateRefusesAndMakesNothing(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	var g Git
	if _, err := g.Create(ctx(t), Spec{Dir: repo, Name: "taken"}); err != nil {
		t.Fatal(err)
	}
	sh(t, repo, "git", "branch", "termsprawl/exists")
	if err := os.MkdirAll(PathFor(repo, "inway"), 0o755); err != nil {
		t.Fatal(err)
	}
	notRepo := t.TempDir()
	before := branches(t, repo)
	cases := []struct {
		name string
		spec Spec
		want string
	}{
		{"not a repository", Spec{Dir: notRepo, Name: "x"}, "not in a git repository"},
		{"bad name", Spec{Dir: repo, Name: "a..b"}, "not a valid branch name"},
		{"bad name with space", Spec{Dir: repo, Name: "a b"}, "not a valid branch name"},
		{"at", Spec{Dir: repo, Name: "@"}, "not a valid branch name"},
		{"reflog form", Spec{Dir: repo, Name: "a@{1}"}, "not a valid branch name"},
		{"lock", Spec{Dir: repo, Name: "x.lock"}, "not a valid branch name"},
		{"dash", Spec{Dir: repo, Name: "-x"}, "not a valid branch name"},
		{"base missing", Spec{Dir: repo, Name: "y", Base: "no-such-branch"}, "is not a commit"},
		{"checked out elsewhere", Spec{Dir: repo, Name: "taken"}, "already checked out at"},
		{"branch exists", Spec{Dir: repo, Name: "exists"}, "already exists"},
		{"path exists", Spec{Dir: repo, Name: "inway"}, "already exists"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := g.Create(ctx(t), c.spec)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want a refusal saying %q", err, c.want)
			}
		})
	}
	if after := branches(t, repo); after != before {
		t.Fatalf("branches changed by refusals:\n%s\n→\n%s", before, after)
	}
	for _, n := range []string{"x", "y", "exists", "a..b", "@"} {
		if _, err := os.Stat(PathFor(repo, n)); err == nil {
			t.Fatalf("a refusal left %s", PathFor(repo, n))
		}
	}
}

func TestIncludeCopiesOnlyIgnoredNamedFiles(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	write(t, filepath.Join(repo, ".worktreeinclude"), ".env\nnotes.txt\nconf/*.log\n")
	write(t, filepath.Join(repo, ".env"), "SECRET=1\n")
	write(t, filepath.Join(repo, "conf", "a.log"), "log\n")
	write(t, filepath.Join(repo, "other.log"), "not named\n")
	write(t, filepath.Join(repo, "notes.txt"), "untracked work, not ignored\n")
	var g Git
	in, err := g.Create(ctx(t), Spec{Dir: repo, Name: "inc"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.CopyIncluded(ctx(t), in, CopyLimits{})
	if err != nil {
		t.Fatal(err)
	}
	copied := res.Paths
	if strings.Join(copied, ",") != ".env,conf/a.log" || len(res.Skipped) != 0 {
		t.Fatalf("copied %q, want .env and conf/a.log", copied)
	}
	if b, _ := os.ReadFile(filepath.Join(in.Path, ".env")); string(b) != "SECRET=1\n" {
		t.Fatalf(".env in the worktree: %q", b)
	}
	for _, n := range []string{"notes.txt", "other.log"} {
		if _, err := os.Stat(filepath.Join(in.Path, n)); err == nil {
			t.Fatalf("%s was copied", n)
		}
	}
}

func TestSetupRunsFirstAndAFailureStillStartsTheProgram(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, SetupFile), `{"setup": [["sh", "-c", "echo setting up; touch made"], ["sh", "-c", "exit 3"]]}`)
	setup, err := Setup(Info{Path: dir})
	if err != nil || len(setup) != 2 {
		t.Fatalf("setup %q %v", setup, err)
	}
	argv := WrapSetup([]string{"copied 1 file"}, setup, []string{"sh", "-c", "echo program runs in $PWD"})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"copied 1 file", "setting up", "worktree setup failed (exit 3)", "program runs in " + dir} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err != nil {
		t.Fatal("setup did not run in the worktree")
	}
	write(t, filepath.Join(dir, SetupFile), `{"setup": "make"}`)
	if _, err := Setup(Info{Path: dir}); err == nil {
		t.Fatal("a setup that is not an argv was accepted")
	}
	write(t, filepath.Join(dir, SetupFile), `{"setup": ["echo", "one argv"]}`)
	if s, err := Setup(Info{Path: dir}); err != nil || len(s) != 1 || s[0][1] != "one argv" {
		t.Fatalf("one argv: %q %v", s, err)
	}
}
