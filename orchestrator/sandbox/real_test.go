package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// realWorld is newWorld with a real repository and linked worktree.
func realWorld(t *testing.T) world {
	t.Helper()
	testenv.LookPath(t, "git", "apt-get install git")
	w := newWorld(t)
	os.RemoveAll(w.repo)
	os.RemoveAll(w.wt)
	run := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+w.home, "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	os.MkdirAll(w.repo, 0o755)
	run(w.repo, "init", "-q", "-b", "main")
	run(w.repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "first")
	run(w.repo, "worktree", "add", "-q", "-b", "feature", w.wt)
	os.WriteFile(filepath.Join(w.home, ".ssh", "id_ed25519"), []byte("DECOY-KEY"), 0o600)
	os.WriteFile(filepath.Join(w.home, ".bashrc"), []byte("# rc\n"), 0o644)
	return w
}

// inside runs script in a sandbox of s and returns its output.
func inside(t *testing.T, w world, s Spec, script string) string {
	t.Helper()
	bwrap := testenv.LookPath(t, "bwrap", "apt-get install bubblewrap")
	if err := Prepare(s); err != nil {
		t.Fatal(err)
	}
	argv, err := Command(bwrap, s, []string{"bash", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "GIT_CONFIG_NOSYSTEM=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sandbox: %v\n%s", err, out)
	}
	return string(out)
}

// attacks prints one line per attempt: NAME ok or NAME fail.
const attacks = `
try() { n=$1; shift; if ( "$@" ) >"$ERRF" 2>&1; then echo "$n ok"; else echo "$n fail: $(tail -c 200 "$ERRF" | tr "\n" " ")"; fi; }
try read-operator cat "$STATE/sessions/operator.json"
try read-own-session cat "$STATE/sessions/n1.json"
try write-session sh -c 'echo x > "$STATE/sessions/n1.json"'
try read-ssh-key cat "$HOME/.ssh/id_ed25519"
try write-bashrc sh -c 'echo evil >> "$HOME/.bashrc"'
try umount-ssh sh -c 'umount -l "$HOME/.ssh"; cat "$HOME/.ssh/id_ed25519"'
try nested-umount-ssh unshare -Urm sh -c 'umount -l "$HOME/.ssh"; cat "$HOME/.ssh/id_ed25519"'
try nested-umount-state unshare -Urm sh -c 'umount -l "$STATE"; cat "$STATE/sessions/operator.json"'
try nested-bwrap bwrap --unshare-user --ro-bind / / -- true
try commit sh -c 'echo hi > f && git add f && git -c user.name=a -c user.email=a@a commit -q -m agent'
try write-git-config git config --file "$REPO/.git/config" core.fsmonitor evil
try write-hook sh -c 'echo evil > "$REPO/.git/hooks/post-checkout"'
try write-info sh -c 'echo x > "$REPO/.git/info/exclude"'
try write-main-head sh -c 'echo x > "$REPO/.git/HEAD"'
try write-claude sh -c 'echo x > "$HOME/.claude/note"'
try write-cache sh -c 'echo x > "$HOME/.cache/note"'
try write-tmp sh -c 'echo x > /tmp/note'
try pid-ns sh -c 'test "$(cat /proc/1/comm)" = bwrap'
`

func parseTries(out string) map[string]string {
	got := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 2 {
			got[f[0]] = strings.TrimSuffix(f[1], ":")
		}
	}
	return got
}

func TestRealProfiles(t *testing.T) {
	t.Parallel()
	if _, err := Probe(context.Background()); err != nil {
		testenv.SkipOrFail(t, "bwrap is not usable: %v (apt-get install bubblewrap)", err)
	}
	for _, c := range []struct {
		profile Profile
		want    map[string]string
	}{
		{Workspace, map[string]string{
			"read-operator": "fail", "read-own-session": "ok", "write-session": "fail", "read-ssh-key": "fail",
			"write-bashrc": "fail", "umount-ssh": "fail", "nested-umount-ssh": "fail", "nested-umount-state": "fail",
			"nested-bwrap": "ok", "commit": "ok", "write-git-config": "fail", "write-hook": "fail", "write-info": "fail",
			"write-main-head": "fail", "write-claude": "ok", "write-cache": "ok", "write-tmp": "ok", "pid-ns": "ok",
		}},
		{Guard, map[string]string{
			"read-operator": "fail", "read-own-session": "ok", "write-session": "fail", "read-ssh-key": "ok",
			"write-bashrc": "ok", "nested-umount-state": "fail", "nested-bwrap": "ok", "commit": "ok",
			"write-git-config": "ok", "write-tmp": "ok", "pid-ns": "ok",
		}},
	} {
		t.Run(string(c.profile), func(t *testing.T) {
			t.Parallel()
			w := realWorld(t)
			s := w.spec(c.profile)
			s.Keep = []string{w.home}
			s.TmuxDirs = nil
			out := inside(t, w, s, "export ERRF="+w.home+"/../tryerr STATE="+w.state+" REPO="+w.repo+"\n"+attacks)
			got := parseTries(out)
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s: %s %q, want %q", c.profile, k, got[k], v)
				}
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("output:\n%s", out)
			}
			if c.profile == Workspace {
				b, _ := os.ReadFile(filepath.Join(w.home, ".cache", "note"))
				if len(b) != 0 {
					t.Errorf("the private cache wrote into the user's ~/.cache")
				}
				if b, _ := os.ReadFile(filepath.Join(w.cache, ".cache", "note")); string(b) != "x\n" {
					t.Errorf("the node's private cache has %q", b)
				}
				log, _ := exec.Command("git", "-C", w.wt, "log", "--oneline", "-1").Output()
				if !strings.Contains(string(log), "agent") {
					t.Errorf("the agent's commit is not in the worktree: %q", log)
				}
			}
		})
	}
}
