package toolserver

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/trust"
	"github.com/termsprawl/termsprawl/tools"
)

// wtRepo makes a git repository (with the package's git configuration,
// TestMain) with a commit, a setup file that fails, a .worktreeinclude
// naming .env; it returns the repository and a check that the
// configuration files are unchanged.
func wtRepo(t *testing.T, prep ...func(repo string)) (string, func()) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (apt-get install git)")
	}
	repo := filepath.Join(t.TempDir(), "my repo")
	wtWrite(t, filepath.Join(repo, "README"), "one\ntwo\nthree\n")
	wtWrite(t, filepath.Join(repo, ".gitignore"), ".env\n")
	wtWrite(t, filepath.Join(repo, ".worktreeinclude"), ".env\n")
	wtWrite(t, filepath.Join(repo, ".termsprawl", "worktree.json"), `{"setup": ["sh", "-c", "echo SETUP-RAN-$(cat .env); exit 4"]}`)
	wtWrite(t, filepath.Join(repo, ".env"), "SECRET\n")
	wtGit(t, repo, "init", "-q")
	wtGit(t, repo, "add", ".")
	wtGit(t, repo, "commit", "-qm", "first")
	for _, f := range prep {
		f(repo)
	}
	files := []string{filepath.Join(repo, ".git", "config"), testGitConfig}
	var before [][]byte
	for _, f := range files {
		b, _ := os.ReadFile(f)
		before = append(before, b)
	}
	return repo, func() {
		for i, f := range files {
			if b, _ := os.ReadFile(f); !bytes.Equal(b, before[i]) {
				t.Errorf("git configuration %s changed:\n%s", f, b)
			}
		}
	}
}

// wtApprove is the human's `termsprawl trust REPO` in state dir.
func wtApprove(t *testing.T, dir, repo string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Open(dir).Approve(repo); err != nil {
		t.Fatal(err)
	}
}

func wtWrite(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wtGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// lineAgent is an agent in miniature: it echoes each line it reads.
const lineAgent = `printf '> '; while IFS= read -r l; do printf 'got: %s\n> ' "$l"; done`

func wtLaunch(t *testing.T, sess, repo, name string, wt apiM) (tools.NodeInfo, tools.WorktreeLaunch) {
	t.Helper()
	r, _ := apiMutate(t, sess, "agent_launch", apiM{"agent": "custom", "command": []string{"sh", "-c", lineAgent}, "name": name, "cwd": repo, "worktree": wt})
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil {
		t.Fatal(err)
	}
	return info, tools.WorktreeLaunch{}
}

func wtEntryOf(t *testing.T, op, path string) (tools.WorktreeEntry, bool) {
	t.Helper()
	var l tools.WorktreeList
	apiOK(t, op, "worktree_list", nil, &l)
	for _, w := range l.Worktrees {
		if w.Path == path {
			return w, true
		}
	}
	return tools.WorktreeEntry{}, false
}

// Two agents on two worktrees of one repository; per-turn diffs; a review
// sent as one task; finish refused on a dirty tree, then merged; kill
// keeps unpushed work; prune removes only the clean and merged.
func TestWorktreeAgentsTurnsReviewFinish(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 8 s on a loaded 2-core machine")
	t.Parallel()
	repo, same := wtRepo(t)
	defer same()
	tmux, dir := apiNewState(t)
	wtApprove(t, dir, repo)
	s := apiStart(t, tmux, dir)
	op := s.op()

	a, _ := wtLaunch(t, op, repo, "alpha", apiM{"branch": "alpha"})
	b, _ := wtLaunch(t, op, repo, "beta", apiM{})
	pa := filepath.Join(filepath.Dir(repo), "my repo.worktrees", "alpha")
	apiWaitScreen(t, op, a.Terminal, "SETUP-RAN-SECRET")
	if scr := apiWaitScreen(t, op, a.Terminal, "starting the program anyway\n>"); !strings.Contains(scr, "worktree setup failed (exit 4)") {
		t.Fatalf("a failing setup is not reported in the node:\n%s", scr)
	}
	// Both run in their own worktree, on their own branch.
	var l tools.NodeList
	apiOK(t, op, "terminal_list", nil, &l)
	var pb string
	for _, n := range l.Terminals {
		switch n.Terminal {
		case a.Terminal:
			if n.Worktree == nil || n.Worktree.Path != pa || n.Worktree.Branch != "termsprawl/alpha" || n.Worktree.Base != "main" {
				t.Fatalf("alpha's worktree in terminal_list: %+v", n.Worktree)
			}
		case b.Terminal:
			if n.Worktree == nil || !strings.HasPrefix(n.Worktree.Branch, "termsprawl/beta-") {
				t.Fatalf("beta's worktree in terminal_list: %+v", n.Worktree)
			}
			pb = n.Worktree.Path
		}
	}
	if got := strings.TrimSpace(wtGit(t, pa, "branch", "--show-current")); got != "termsprawl/alpha" {
		t.Fatalf("alpha's worktree is on %q", got)
	}

	// A turn: a commit, an edited tracked file and a new file.
	wtWrite(t, filepath.Join(pa, "committed.txt"), "c\n")
	wtGit(t, pa, "add", "committed.txt")
	wtGit(t, pa, "commit", "-qm", "agent work")
	wtWrite(t, filepath.Join(pa, "README"), "one\nTWO\nthree\n")
	wtWrite(t, filepath.Join(pa, "new.txt"), "brand\nnew\n")
	ag := s.session(a.Terminal)
	apiOK(t, ag, "agent_report", apiM{"event": "UserPromptSubmit"}, nil)
	apiOK(t, ag, "agent_report", apiM{"event": "Stop"}, nil)
	var d tools.WorktreeDiff
	waitFor(t, 20*time.Second, "the turn's diff recorded", func() bool {
		apiOK(t, op, "worktree_diff", apiM{"node": a.Terminal, "stat": true}, &d)
		return len(d.Turns) == 1
	})
	if tr := d.Turns[0]; tr.Turn != 1 || tr.Files != 3 || tr.Insertions != 1+1+2 || tr.Deletions != 1 || tr.Head == "" {
		t.Fatalf("turn 1: %+v", tr)
	}
	apiOK(t, op, "worktree_diff", apiM{"node": a.Terminal, "turn": 1}, &d)
	for _, want := range []string{"+TWO", "+++ b/new.txt", "+++ b/committed.txt"} {
		if !strings.Contains(d.Diff, want) {
			t.Fatalf("turn 1's diff lacks %q:\n%s", want, d.Diff)
		}
	}
	apiFail(t, op, "worktree_diff", apiM{"node": a.Terminal, "turn": 9}, tools.KindNotFound)

	// Review: two comments, sent as one task quoting each hunk.
	apiMutate(t, op, "worktree_comment", apiM{"node": a.Terminal, "file": "README", "line": 2, "text": "why capitals?"})
	apiMutate(t, op, "worktree_comment", apiM{"node": "alpha", "file": "new.txt", "line": 1, "text": "name it better"})
	r, _ := apiMutate(t, op, "worktree_review_send", apiM{"node": a.Terminal})
	var sent tools.WorktreeReviewSent
	if err := json.Unmarshal(r.Result, &sent); err != nil {
		t.Fatal(err)
	}
	if sent.Comments != 2 || sent.Task == "" || !strings.Contains(sent.Text, "README:2: why capitals?") || !strings.Contains(sent.Text, "+TWO") || !strings.Contains(sent.Text, "new.txt:1: name it better") || !strings.Contains(sent.Text, "+brand") {
		t.Fatalf("review sent: %+v", sent)
	}
	var task tools.Task
	apiOK(t, op, "agent_task", apiM{"task": sent.Task}, &task)
	if task.Text != sent.Text || task.To != a.Terminal {
		t.Fatalf("task %+v", task)
	}
	apiWaitScreen(t, op, a.Terminal, "got: Review of your changes")
	apiFail(t, op, "worktree_review_send", apiM{"node": a.Terminal}, tools.KindRejected) // nothing left to send

	// finish is refused on a dirty tree, naming the files; nothing removed.
	res := apiFail(t, op, "worktree_finish", apiM{"node": a.Terminal, "mode": "merge"}, tools.KindRejected)
	if !strings.Contains(res.Error, "README") || !strings.Contains(res.Error, "new.txt") {
		t.Fatalf("dirty finish: %s", res.Error)
	}
	if _, err := os.Stat(filepath.Join(pa, "new.txt")); err != nil {
		t.Fatal("a refused finish removed work")
	}
	// kill keeps unpushed work: beta commits, is killed, its worktree stays.
	wtWrite(t, filepath.Join(pb, "beta.txt"), "b\n")
	wtGit(t, pb, "add", "beta.txt")
	wtGit(t, pb, "commit", "-qm", "beta work")
	apiMutate(t, op, "terminal_close", apiM{"terminal": b.Terminal})
	if w, ok := wtEntryOf(t, op, pb); !ok || !w.Exists || w.Ahead != 1 || w.Node != "" {
		t.Fatalf("beta's worktree after kill: %+v %v", w, ok)
	}

	// Commit alpha's work and merge it: merged, removed, branch deleted.
	wtGit(t, pa, "add", "-A")
	wtGit(t, pa, "commit", "-qm", "the rest")
	r, _ = apiMutate(t, op, "worktree_finish", apiM{"node": a.Terminal, "mode": "merge"})
	var fin tools.WorktreeFinished
	if err := json.Unmarshal(r.Result, &fin); err != nil {
		t.Fatal(err)
	}
	if !fin.Merged || !fin.Removed || !fin.BranchDeleted || fin.Node != a.Terminal {
		t.Fatalf("finish --merge: %+v", fin)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "new.txt")); string(b) != "brand\nnew\n" {
		t.Fatal("the merge did not reach the main worktree")
	}
	apiOK(t, op, "terminal_list", nil, &l)
	for _, n := range l.Terminals {
		if n.Terminal == a.Terminal {
			t.Fatal("the finished node is still running")
		}
	}

	// A shell node's worktree, clean and merged once its node is gone:
	// prune removes it and keeps beta (not merged).
	rc, _ := apiMutate(t, op, "terminal_launch", apiM{"command": []string{"cat"}, "cwd": repo, "worktree": apiM{"branch": "gamma"}})
	var c tools.NodeInfo
	_ = json.Unmarshal(rc.Result, &c)
	pc := filepath.Join(filepath.Dir(repo), "my repo.worktrees", "gamma")
	apiOK(t, op, "worktree_diff", apiM{"node": c.Terminal}, &d) // a shell records a turn at each look
	if len(d.Turns) != 1 || d.Files != 0 {
		t.Fatalf("shell's diff: %+v", d)
	}
	apiMutate(t, op, "terminal_close", apiM{"terminal": c.Terminal})
	r, _ = apiMutate(t, op, "worktree_prune", nil)
	var pr tools.WorktreePruned
	_ = json.Unmarshal(r.Result, &pr)
	if len(pr.Removed) != 1 || pr.Removed[0].Path != pc || len(pr.Kept) != 1 || pr.Kept[0].Path != pb || !strings.Contains(pr.Kept[0].Reason, "not merged") {
		t.Fatalf("prune: %+v", pr)
	}
	if _, err := os.Stat(pb); err != nil {
		t.Fatal("prune removed unmerged work")
	}
	// finish on a node without a worktree says so.
	sh := apiLaunch(t, op, "cat")
	if res := apiFail(t, op, "worktree_finish", apiM{"node": sh, "mode": "keep"}, tools.KindNotFound); !strings.Contains(res.Error, "has no worktree") {
		t.Fatalf("finish without a worktree: %s", res.Error)
	}
	// The orchestrator going down keeps every worktree.
	s.stop()
	if _, err := os.Stat(filepath.Join(pb, "beta.txt")); err != nil {
		t.Fatal("down removed a worktree")
	}
}

// Launch refusals say what to do and create nothing.
func TestWorktreeLaunchRefusals(t *testing.T) {
	t.Parallel()
	repo, same := wtRepo(t)
	defer same()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	notRepo := t.TempDir()
	wtWrite(t, filepath.Join(filepath.Dir(repo), "my repo.worktrees", "inway", "x"), "x")
	for _, c := range []struct {
		cwd  string
		wt   apiM
		want string
	}{
		{notRepo, apiM{}, "not in a git repository"},
		{repo, apiM{"branch": "a..b"}, "not a valid branch name"},
		{repo, apiM{"branch": "x", "base": "nope"}, "is not a commit"},
		{repo, apiM{"branch": "inway"}, "already exists"},
	} {
		res := apiFail(t, op, "terminal_launch", apiM{"command": []string{"cat"}, "cwd": c.cwd, "worktree": c.wt}, tools.KindRejected)
		if !strings.Contains(res.Error, c.want) {
			t.Fatalf("%v: %s, want %q", c.wt, res.Error, c.want)
		}
	}
	apiMutate(t, op, "terminal_launch", apiM{"command": []string{"cat"}, "cwd": repo, "worktree": apiM{"branch": "one"}})
	res := apiFail(t, op, "terminal_launch", apiM{"command": []string{"cat"}, "cwd": repo, "worktree": apiM{"branch": "one"}}, tools.KindRejected)
	if !strings.Contains(res.Error, "already checked out at") {
		t.Fatalf("second launch on one branch: %s", res.Error)
	}
	var l tools.NodeList
	apiOK(t, op, "terminal_list", nil, &l)
	if len(l.Terminals) != 1 {
		t.Fatalf("refused launches made nodes: %d", len(l.Terminals))
	}
	if out := wtGit(t, repo, "branch", "--list"); strings.Count(out, "termsprawl/") != 1 {
		t.Fatalf("refused launches made branches:\n%s", out)
	}
	// Made-up names never collide, even for two launches in one second.
	for range 2 {
		apiMutate(t, op, "terminal_launch", apiM{"command": []string{"cat"}, "name": "twin", "cwd": repo, "worktree": apiM{}})
	}
	if out := wtGit(t, repo, "branch", "--list", "termsprawl/twin-*"); strings.Count(out, "termsprawl/twin-") != 2 {
		t.Fatalf("two default worktrees:\n%s", out)
	}
}

// terminal_list never waits on a slow git: the worktree's status comes
// from a cache refreshed in the background. The fake git blocks every
// status on a FIFO until the test lets it go.
func TestWorktreeListDoesNotWaitForGit(t *testing.T) {
	repo, _ := wtRepo(t)
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	dir0 := t.TempDir()
	fifo := filepath.Join(dir0, "gate")
	if err := exec.Command("mkfifo", fifo).Run(); err != nil {
		t.Skip("mkfifo: ", err)
	}
	fake := filepath.Join(dir0, "git")
	wtWrite(t, fake, "#!/bin/sh\nif [ \"$1\" = status ]; then cat '"+fifo+"' >/dev/null; fi\nexec '"+real+"' \"$@\"\n")
	os.Chmod(fake, 0o755)
	saved := WorktreeGit
	WorktreeGit.Bin = fake
	t.Cleanup(func() { WorktreeGit = saved })

	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	r, _ := apiMutate(t, op, "terminal_launch", apiM{"command": []string{"cat"}, "cwd": repo, "worktree": apiM{"branch": "slow"}})
	var info tools.NodeInfo
	_ = json.Unmarshal(r.Result, &info)
	wtWrite(t, filepath.Join(filepath.Dir(repo), "my repo.worktrees", "slow", "dirt.txt"), "x\n")
	list := func() *tools.WorktreeState {
		var l tools.NodeList
		apiOK(t, op, "terminal_list", nil, &l)
		for _, n := range l.Terminals {
			if n.Terminal == info.Terminal {
				return n.Worktree
			}
		}
		return nil
	}
	// The first list starts the refresh, which blocks in git status; the
	// lists answer all the same, without a status yet.
	for range 3 {
		if w := list(); w == nil || w.Branch != "termsprawl/slow" || w.Checked != "" {
			t.Fatalf("while git is blocked: %+v", w)
		}
	}
	gate, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	gate.Close() // the blocked status reads EOF and runs
	waitFor(t, 20*time.Second, "the cached status", func() bool {
		w := list()
		return w != nil && w.Checked != "" && w.Dirty
	})
}

// Push to a bare remote through worktree_finish; submodules initialized
// only when the launch asks; the configuration stays byte-identical.
func TestWorktreePushAndSubmodules(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 3 s on a loaded 2-core machine")
	bare := filepath.Join(t.TempDir(), "remote.git")
	repo, same := wtRepo(t, func(repo string) {
		wtGit(t, repo, "init", "-q", "--bare", bare)
		wtGit(t, repo, "remote", "add", "origin", bare)
		sub := filepath.Join(t.TempDir(), "sub")
		wtGit(t, repo, "init", "-q", sub)
		wtWrite(t, filepath.Join(sub, "lib.txt"), "lib\n")
		wtGit(t, sub, "add", ".")
		wtGit(t, sub, "commit", "-qm", "lib")
		wtGit(t, repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "lib")
		wtGit(t, repo, "commit", "-qm", "submodule")
	})
	defer same()
	t.Setenv("GIT_CONFIG_COUNT", "1") // the test's file:// submodule needs this; it is no configuration file
	t.Setenv("GIT_CONFIG_KEY_0", "protocol.file.allow")
	t.Setenv("GIT_CONFIG_VALUE_0", "always")
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	base := filepath.Join(filepath.Dir(repo), "my repo.worktrees")
	apiMutate(t, op, "terminal_launch", apiM{"command": []string{"cat"}, "cwd": repo, "worktree": apiM{"branch": "plain"}})
	apiMutate(t, op, "terminal_launch", apiM{"command": []string{"cat"}, "cwd": repo, "worktree": apiM{"branch": "subs", "submodules": true}})
	if _, err := os.Stat(filepath.Join(base, "plain", "lib", "lib.txt")); err == nil {
		t.Fatal("submodules initialized unasked")
	}
	if b, err := os.ReadFile(filepath.Join(base, "subs", "lib", "lib.txt")); err != nil || string(b) != "lib\n" {
		t.Fatalf("submodules not initialized when asked: %q %v", b, err)
	}
	p := filepath.Join(base, "plain")
	wtWrite(t, filepath.Join(p, "pushed.txt"), "p\n")
	wtGit(t, p, "add", "pushed.txt")
	wtGit(t, p, "commit", "-qm", "to push")
	head := strings.TrimSpace(wtGit(t, p, "rev-parse", "HEAD"))
	r, _ := apiMutate(t, op, "worktree_finish", apiM{"node": "termsprawl/plain", "mode": "push"})
	var fin tools.WorktreeFinished
	_ = json.Unmarshal(r.Result, &fin)
	if fin.Pushed != "origin/termsprawl/plain" || !fin.Removed || fin.BranchDeleted {
		t.Fatalf("finish --push: %+v", fin)
	}
	if got := strings.TrimSpace(wtGit(t, bare, "rev-parse", "refs/heads/termsprawl/plain")); got != head {
		t.Fatalf("the remote has %s, want %s", got, head)
	}
	if !strings.Contains(wtGit(t, repo, "branch", "--list"), "termsprawl/plain") {
		t.Fatal("the pushed, unmerged branch was deleted")
	}
}

// A launch request persisted with its filled-in worktree (a restore after
// a reboot) starts in that worktree again: nothing is made, the setup does
// not run again, the program is the one asked for.
func TestWorktreeReusedByAPersistedLaunch(t *testing.T) {
	t.Parallel()
	repo, same := wtRepo(t)
	defer same()
	tmux, dir := apiNewState(t)
	o, api := inProcessServer(t, tmux, dir)()
	defer o.Close()
	defer api.Close()
	c := &call{ctx: t.Context(), caller: operatorIdentity, s: api}
	spec := orchestrator.LaunchSpec{Command: []string{"sh", "-c", "echo PROGRAM-STARTED; exec cat"}, Cwd: repo, Worktree: &tools.WorktreeLaunch{Branch: "again"}}
	first, err := c.launchFor(spec)
	if err != nil {
		t.Fatal(err)
	}
	w := *spec.Worktree
	if w.Path == "" || w.FullBranch != "termsprawl/again" || w.Base != "main" || w.BaseCommit == "" || !w.Wrapped {
		t.Fatalf("the launch's worktree was not filled in: %+v", w)
	}
	persisted, _ := json.Marshal(orchestrator.LaunchSpec{Command: []string{"/bin/sh", "-c", "echo SETUP-AGAIN"}, Worktree: &w})
	if err := o.CloseNode(t.Context(), first.Terminal); err != nil {
		t.Fatal(err)
	}
	var again orchestrator.LaunchSpec
	if err := json.Unmarshal(persisted, &again); err != nil {
		t.Fatal(err)
	}
	second, err := c.launchFor(again)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the program in the reused worktree", func() bool {
		snap, err := o.Snapshot(context.Background(), second.Terminal)
		return err == nil && strings.Contains(strings.Join(snap.Lines, "\n"), "PROGRAM-STARTED")
	})
	snap, _ := o.Snapshot(context.Background(), second.Terminal)
	if strings.Contains(strings.Join(snap.Lines, "\n"), "SETUP") {
		t.Fatalf("the setup ran again:\n%s", strings.Join(snap.Lines, "\n"))
	}
	if got := o.CurrentPath(t.Context(), second.Terminal); got != w.Path {
		t.Fatalf("restored node runs in %q, want %q", got, w.Path)
	}
	if e := api.wtTab().byNode(second.Terminal, ""); e == nil || e.Path != w.Path {
		t.Fatalf("the restored node is not tied to its worktree: %+v", e)
	}
	if out := wtGit(t, repo, "worktree", "list"); strings.Count(out, "\n") != 2 {
		t.Fatalf("a worktree was made again:\n%s", out)
	}
}
