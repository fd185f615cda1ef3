package toolserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// forkFake writes a fake agent program named kind that prints its
// arguments and waits.
func forkFake(t *testing.T, kind string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), kind)
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho \"ARGV: $*\"\npwd\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func forkLaunch(t *testing.T, sess, kind, program, cwd string) string {
	t.Helper()
	r, _ := apiMutate(t, sess, "agent_launch", apiM{"agent": kind, "command": []string{program}, "cwd": cwd, "name": kind + "-orig"})
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil || info.Terminal == "" {
		t.Fatalf("agent_launch %s: %s %v", kind, r.Result, err)
	}
	return info.Terminal
}

func forkOK(t *testing.T, sess string, args apiM) tools.ForkResult {
	t.Helper()
	r, _ := apiMutate(t, sess, "agent_fork", args)
	var f tools.ForkResult
	if err := json.Unmarshal(r.Result, &f); err != nil || f.Terminal == "" {
		t.Fatalf("agent_fork: %s %v", r.Result, err)
	}
	return f
}

// Each kind with a fork form starts its program with it (the argv the
// fork was launched with, printed by a fake program of that name);
// Gemini CLI (no fork form), a shell node and an agent that has not
// reported its conversation id are refused, naming why.
func TestAgentForkKinds(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	cwd := t.TempDir()
	for _, c := range []struct{ kind, want string }{
		{"claude", "--resume conv-claude-1 --fork-session"},
		{"codex", "ARGV: fork conv-codex-1"},
		{"opencode", "--session conv-opencode-1 --fork"},
	} {
		node := forkLaunch(t, op, c.kind, forkFake(t, c.kind), cwd)
		res := apiFail(t, op, "agent_fork", apiM{"node": node}, tools.KindRejected)
		if !strings.Contains(res.Error, "conversation id") {
			t.Fatalf("%s without a conversation id: %s", c.kind, res.Error)
		}
		apiOK(t, s.session(node), "agent_report", apiM{"state": "idle", "conversation": "conv-" + c.kind + "-1"}, nil)
		f := forkOK(t, op, apiM{"node": node})
		if f.From != node || f.Conversation != "conv-"+c.kind+"-1" || f.Name != c.kind+"-orig-fork" || f.Agent != c.kind || f.Cwd != cwd {
			t.Fatalf("%s fork: %+v", c.kind, f)
		}
		fleetWait(t, op, f.Terminal, c.want)
		f = forkOK(t, op, apiM{"node": node, "name": "second"})
		if f.Name != "second" {
			t.Fatalf("%s fork named second: %+v", c.kind, f)
		}
	}
	gem := forkLaunch(t, op, "gemini", forkFake(t, "gemini"), cwd)
	apiOK(t, s.session(gem), "agent_report", apiM{"state": "idle", "conversation": "conv-gemini-1"}, nil)
	res := apiFail(t, op, "agent_fork", apiM{"node": gem}, tools.KindRejected)
	if !strings.Contains(res.Error, "Gemini CLI") {
		t.Fatalf("gemini fork: %s", res.Error)
	}
	sh := apiLaunch(t, op, "sh", "-c", "exec sleep 600")
	res = apiFail(t, op, "agent_fork", apiM{"node": sh}, tools.KindRejected)
	if !strings.Contains(res.Error, "shell") {
		t.Fatalf("shell fork: %s", res.Error)
	}
	apiFail(t, op, "agent_fork", apiM{"node": "nobody"}, tools.KindNotFound)
}

// forkTree hashes every file beneath dir but .git (path, mode, content or
// link target).
func forkTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a linked worktree's .git file
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		h := sha256.New()
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			h.Write([]byte("link:" + l))
		case st.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		out[rel] = st.Mode().String() + " " + hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A fork with a worktree starts in a new worktree branched from the
// node's HEAD with its uncommitted changes (modified, staged, deleted,
// untracked files, not the ignored ones); the node's own worktree is
// byte-identical after (every file's hash, git status and the index).
func TestAgentForkWorktree(t *testing.T) {
	t.Parallel()
	repo, checkConfig := wtRepo(t, func(repo string) {
		wtWrite(t, filepath.Join(repo, "gone.txt"), "to delete\n")
		wtWrite(t, filepath.Join(repo, "bin.dat"), "\x00\x01binary\x02")
		wtGit(t, repo, "add", ".")
		wtGit(t, repo, "commit", "-qm", "second")
	})
	defer checkConfig()
	wtWrite(t, filepath.Join(repo, "README"), "one\nTWO CHANGED\nthree\n")
	wtWrite(t, filepath.Join(repo, "staged.txt"), "staged new\n")
	wtGit(t, repo, "add", "staged.txt")
	if err := os.Remove(filepath.Join(repo, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	wtWrite(t, filepath.Join(repo, "bin.dat"), "\x00\x01binary changed\x03")
	wtWrite(t, filepath.Join(repo, "sub", "new.go"), "package sub\n")
	if err := os.Symlink("README", filepath.Join(repo, "link")); err != nil {
		t.Fatal(err)
	}
	wtWrite(t, filepath.Join(repo, ".env"), "SECRET CHANGED\n") // ignored: not copied

	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	node := forkLaunch(t, op, "claude", forkFake(t, "claude"), repo)
	apiOK(t, s.session(node), "agent_report", apiM{"state": "idle", "conversation": "conv-wt-1"}, nil)

	status := func() string {
		cmd := exec.Command("git", "status", "--porcelain=v1", "--untracked-files=all")
		cmd.Dir, cmd.Env = repo, append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git status: %v %s", err, out)
		}
		return string(out)
	}
	index := func() string {
		b, err := os.ReadFile(filepath.Join(repo, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		return hex.EncodeToString(h[:])
	}
	head := strings.TrimSpace(wtGit(t, repo, "rev-parse", "HEAD"))
	indexBefore := index()
	treeBefore, statusBefore := forkTree(t, repo), status()

	f := forkOK(t, op, apiM{"node": node, "worktree": apiM{"branch": "try-again"}})
	if f.Cwd == repo || !strings.HasSuffix(f.Cwd, "try-again") || f.Copied != 6 {
		t.Fatalf("fork into a worktree: %+v", f)
	}
	fleetWait(t, op, f.Terminal, "--resume conv-wt-1 --fork-session")
	fleetWait(t, op, f.Terminal, f.Cwd)

	if got := forkTree(t, repo); !maps.Equal(got, treeBefore) {
		t.Fatalf("the node's worktree changed:\nbefore %v\nafter  %v", treeBefore, got)
	}
	if got := status(); got != statusBefore {
		t.Fatalf("git status of the node's worktree changed:\n%s\nwas\n%s", got, statusBefore)
	}
	if got := index(); got != indexBefore {
		t.Fatalf("the node's index changed")
	}
	// The fork's worktree: the node's files, the ignored one as committed
	// (.worktreeinclude copies the main worktree's), on its own branch.
	wt := forkTree(t, f.Cwd)
	for _, p := range []string{"README", "staged.txt", "bin.dat", filepath.Join("sub", "new.go"), "link"} {
		if wt[p] != treeBefore[p] {
			t.Errorf("%s in the fork's worktree: %q, want %q", p, wt[p], treeBefore[p])
		}
	}
	if _, ok := wt["gone.txt"]; ok {
		t.Errorf("gone.txt was deleted in the node's worktree but is in the fork's")
	}
	if b := strings.TrimSpace(wtGit(t, f.Cwd, "rev-parse", "HEAD")); b != head {
		t.Errorf("the fork's worktree is at %s, want the node's HEAD %s", b, head)
	}
	if br := strings.TrimSpace(wtGit(t, f.Cwd, "branch", "--show-current")); br != "termsprawl/try-again" {
		t.Errorf("the fork's branch is %q", br)
	}
}
