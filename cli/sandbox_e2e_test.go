package cli

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/sshtest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// needBwrap skips (or fails in CI) without a usable bubblewrap.
func needBwrap(t *testing.T) {
	t.Helper()
	testenv.LookPath(t, "bwrap", "apt-get install bubblewrap")
	if out, err := exec.Command("bwrap", "--unshare-user", "--uid", "1000", "--gid", "1000", "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true").CombinedOutput(); err != nil {
		testenv.SkipOrFail(t, "bwrap cannot start a sandbox here: %v: %s", err, out)
	}
}

// sandboxWorld is what an attack needs: a test HOME with a decoy key and
// a shell rc file, a repository, and a private TMUX_TMPDIR with a
// "default" tmux server of the user's own in it.
type sandboxWorld struct {
	home, repo, tmuxDir string
}

func newSandboxWorld(t *testing.T) sandboxWorld {
	t.Helper()
	// A short TMUX_TMPDIR: socket paths are limited to 107 bytes.
	tmuxDir, err := os.MkdirTemp("", "tsbx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmuxDir) })
	// The home directory is removed once nothing writes it any more: an
	// unsandboxed program ending with its node (bash, git) may still be
	// writing there as the test ends.
	home, err := os.MkdirTemp("", "tsbx-home")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		testenv.Until(10*time.Second, func() bool { return os.RemoveAll(home) == nil })
		if _, err := os.Stat(home); err == nil {
			var left []string
			filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error { left = append(left, p); return nil })
			t.Errorf("the home directory could not be removed; left: %q", left)
		}
	})
	w := sandboxWorld{home: home, repo: filepath.Join(t.TempDir(), "repo"), tmuxDir: tmuxDir}
	os.MkdirAll(filepath.Join(w.home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(w.home, ".ssh", "id_ed25519"), []byte("DECOY-PRIVATE-KEY\n"), 0o600)
	os.WriteFile(filepath.Join(w.home, ".bashrc"), []byte("# the human's rc\n"), 0o644)
	os.MkdirAll(w.repo, 0o755)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = w.repo
		cmd.Env = append(os.Environ(), "HOME="+w.home)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	// Every tmux of this test lives under the private TMUX_TMPDIR: the
	// test's termsprawl servers and the human's "default" server, which
	// the attack tries with `tmux ls`. The real default server is never
	// touched.
	t.Setenv("TMUX_TMPDIR", w.tmuxDir)
	def := exec.Command("tmux", "-L", "default", "-f", os.DevNull, "new-session", "-d", "-s", "humans", "cat")
	if out, err := def.CombinedOutput(); err != nil {
		t.Fatalf("start the test's default tmux server: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-L", "default", "kill-server").Run() })
	return w
}

// attackScript tries each attack and prints "NAME ok" or "NAME fail".
const attackScript = `#!/bin/bash
try() { n=$1; shift; if ( "$@" ) >"$PWD/.attack.err" 2>&1; then echo "$n ok"; else echo "$n fail $(tr '\n' ' ' < "$PWD/.attack.err" | head -c 400)"; fi; }
try read-operator cat "$STATE/sessions/operator.json"
try read-other-session cat "$STATE/sessions/$VICTIM.json"
try answer-own-dialog "$TS" answer "$DIALOG" allow
try tmux-send-keys tmux -L "$VSOCK" send-keys -t "=ts-$VICTIM:" "echo PWNED-$PROFILE" Enter
try tmux-send-keys-path tmux -S "$VSOCKPATH" send-keys -t "=ts-$VICTIM:" "echo PWNED-$PROFILE" Enter
try tmux-ls-default env -u TMUX tmux ls
try tmux-ls-default-path tmux -S "$DEFSOCKPATH" ls
try kill-orchestrator kill -0 "$ORCH"
try write-bashrc sh -c 'echo evil >> "$HOME/.bashrc"'
try read-ssh-key cat "$HOME/.ssh/id_ed25519"
try umount-ssh sh -c 'umount -l "$HOME/.ssh" 2>/dev/null; cat "$HOME/.ssh/id_ed25519"'
try nested-umount unshare -Urm sh -c 'umount -l "$HOME/.ssh" 2>/dev/null; umount -l "$STATE" 2>/dev/null; cat "$HOME/.ssh/id_ed25519" "$STATE/sessions/operator.json"'
try commit sh -c 'echo work > work.txt && git add work.txt && git -c user.name=a -c user.email=a@a commit -q -m agent-work'
try write-git-config git config --file "$REPO/.git/config" core.fsmonitor evil
try write-git-hook sh -c 'echo evil > "$REPO/.git/hooks/post-checkout"'
try report-state termsprawlctl call agent_report '{"state":"working","message":"from inside"}'
try nested-bwrap bwrap --unshare-user --ro-bind / / --proc /proc --dev /dev -- true
try launch-child termsprawlctl call terminal_launch '{"name":"child-'$PROFILE'","sandbox":"none","command":["sh","-c","if cat '$STATE'/sessions/operator.json >/dev/null 2>&1; then echo CHILD-READ; else echo CHILD-NOREAD; fi; exec cat"]}'
echo ATTACKS-DONE
`

// The attacks of CONTRACT §27 from inside an agent launched through
// termsprawl's own launch path (termsprawl agent --worktree --sandbox),
// for each profile: what must fail and what must still work.
func TestSandboxAttacks(t *testing.T) {
	// Not parallel: newSandboxWorld sets the process's TMUX_TMPDIR.
	needBwrap(t)
	testenv.LookPath(t, "git", "apt-get install git")
	const o, f = "ok", "fail"
	for _, c := range []struct {
		profile string
		want    map[string]string
	}{
		{"workspace", map[string]string{
			"read-operator": f, "read-other-session": f, "answer-own-dialog": f, "tmux-send-keys": f, "tmux-ls-default": f, "tmux-send-keys-path": f, "tmux-ls-default-path": f,
			"kill-orchestrator": f, "write-bashrc": f, "read-ssh-key": f, "umount-ssh": f, "nested-umount": f,
			"commit": o, "write-git-config": f, "write-git-hook": f, "report-state": o, "nested-bwrap": o, "launch-child": o}},
		{"guard", map[string]string{
			"read-operator": f, "read-other-session": f, "answer-own-dialog": f, "tmux-send-keys": f, "tmux-ls-default": f, "tmux-send-keys-path": f, "tmux-ls-default-path": f,
			"kill-orchestrator": f, "write-bashrc": o, "read-ssh-key": o, "umount-ssh": o, "nested-umount": f,
			"commit": o, "write-git-config": o, "write-git-hook": o, "report-state": o, "nested-bwrap": o, "launch-child": o}},
		// Unsandboxed: the attacks work (why the default is workspace).
		// Whether `termsprawl answer` inside a node is refused is another
		// rule's (it acts with the node's session there).
		{"none", map[string]string{
			"read-operator": o, "read-other-session": o, "tmux-send-keys-path": o, "tmux-ls-default-path": o,
			"kill-orchestrator": o, "write-bashrc": o, "read-ssh-key": o,
			"commit": o, "write-git-config": o, "write-git-hook": o, "report-state": o, "nested-bwrap": o, "launch-child": o}},
	} {
		t.Run(c.profile, func(t *testing.T) {
			w := newSandboxWorld(t)
			e := newE2E(t)
			// No history file: an unsandboxed bash writes one into the
			// home directory as the nodes end, racing the test's cleanup.
			e.env = append(e.env, "HOME="+w.home, "HISTFILE=")
			up, _ := e.up()
			defer e.down(up)
			var ep tools.Endpoint
			b, _ := os.ReadFile(tools.EndpointPath(e.state))
			json.Unmarshal(b, &ep)

			victim := strings.TrimSpace(e.must(e.ts, "new", "--name", "victim", "--", "bash", "--norc", "--noprofile"))
			id := strings.TrimSpace(e.must(e.ts, "agent", "custom", "--name", "attacker", "--sandbox", c.profile,
				"--cwd", w.repo, "--worktree", "wt-"+c.profile, "--", "bash", "--norc", "--noprofile"))
			var list tools.NodeList
			json.Unmarshal([]byte(e.must(e.ts, "ls", "--json")), &list)
			var wt, vsock string
			for _, n := range list.Terminals {
				switch n.Terminal {
				case id:
					if n.Sandbox != c.profile {
						t.Fatalf("ls --json: the attacker's sandbox is %q, want %q", n.Sandbox, c.profile)
					}
					if n.Worktree == nil {
						t.Fatalf("the attacker has no worktree: %+v", n)
					}
					wt = n.Worktree.Path
				case victim:
					vsock = n.TmuxSocket
				}
			}
			// Its own pending permission dialog, which it tries to allow.
			sa := tools.SessionPath(e.state, id)
			r := e.callValue(sa, "dialog_request", map[string]any{"kind": "permission", "title": "Bash: rm -rf /", "timeout_ms": 120000, "wait_ms": 100}, nil)
			dialog, _ := r.Details["dialog"].(string)
			if dialog == "" {
				t.Fatalf("dialog_request: %+v", r)
			}
			if err := os.WriteFile(filepath.Join(wt, "attack.sh"), []byte(attackScript), 0o755); err != nil {
				t.Fatal(err)
			}
			// The sockets by their paths too: the uid inside differs, so
			// `tmux -L` alone would look elsewhere.
			sockDir := filepath.Join(w.tmuxDir, fmt.Sprintf("tmux-%d", os.Getuid()))
			vars := fmt.Sprintf("export STATE=%s VICTIM=%s VSOCK=%s VSOCKPATH=%s DEFSOCKPATH=%s ORCH=%d REPO=%s DIALOG=%s TS=%s PROFILE=%s",
				e.state, victim, vsock, filepath.Join(sockDir, vsock), filepath.Join(sockDir, "default"), ep.PID, w.repo, dialog, e.ts, c.profile)
			e.submit(e.oper, id, vars+"; ./attack.sh > attack.out 2>&1; echo ATTACKS-$((6*7))", "ATTACKS-42")
			out, err := os.ReadFile(filepath.Join(wt, "attack.out"))
			if err != nil || !strings.Contains(string(out), "ATTACKS-DONE") {
				t.Fatalf("attack.out: %v\n%s", err, out)
			}
			got, lines := map[string]string{}, map[string]string{}
			for _, l := range strings.Split(string(out), "\n") {
				if fs := strings.Fields(l); len(fs) >= 2 {
					got[fs[0]], lines[fs[0]] = fs[1], l
				}
			}
			// The refusal says who may answer (CONTRACT §27).
			if c.profile != "none" && !strings.Contains(lines["answer-own-dialog"], "refused: termsprawl runs inside node "+id) ||
				c.profile != "none" && !strings.Contains(lines["answer-own-dialog"], "a human answers from the dashboard, M-F11 or `C-b a`") {
				t.Errorf("%s: termsprawl answer inside the node does not say who answers: %q", c.profile, lines["answer-own-dialog"])
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s: %s %s, want %s", c.profile, k, got[k], v)
				}
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("inside %s:\n%s", c.profile, out)
			}

			// What the attempts changed outside, seen from outside.
			rc, _ := os.ReadFile(filepath.Join(w.home, ".bashrc"))
			if c.profile == "workspace" && strings.Contains(string(rc), "evil") {
				t.Errorf("~/.bashrc was written: %q", rc)
			}
			if c.profile != "none" {
				if d := e.dialogsJSON(); !strings.Contains(d, dialog) {
					t.Errorf("the agent's own dialog %s is no longer pending after its answer attempt:\n%s", dialog, d)
				}
				_, snap, _ := e.run(e.ts, "snapshot", victim)
				if strings.Contains(snap, "PWNED") {
					t.Errorf("the agent typed into another node:\n%s", snap)
				}
			}
			if log, err := exec.Command("git", "-C", wt, "log", "--oneline", "-1").Output(); err != nil || !strings.Contains(string(log), "agent-work") {
				t.Errorf("the agent's commit is not in its worktree: %v %q", err, log)
			}
			if st := e.agentState(id); st.Message != "from inside" {
				t.Errorf("the state reported from inside did not arrive: %+v", st)
			}
			// The node it launched asking for none runs at least as
			// strictly as it, and cannot read the operator's token.
			child := "child-" + c.profile
			json.Unmarshal([]byte(e.must(e.ts, "ls", "--json")), &list)
			for _, n := range list.Terminals {
				if n.Terminal == child && n.Sandbox != c.profile {
					t.Errorf("the child launched with sandbox none runs under %q, want %q", n.Sandbox, c.profile)
				}
			}
			if c.profile != "none" {
				e.waitFor(child, "CHILD-NOREAD")
			} else {
				e.waitFor(child, "CHILD-READ")
			}
			// ls shows the profile; an unsandboxed agent stands out.
			ls := e.must(e.ts, "ls")
			want := c.profile
			if c.profile == "none" {
				want = "!unsandboxed"
			}
			if !strings.Contains(ls, want) {
				t.Errorf("ls does not show %q:\n%s", want, ls)
			}
		})
	}
}

// dialogsJSON is `termsprawl dialogs --json`.
func (e *e2e) dialogsJSON() string {
	e.t.Helper()
	return e.must(e.ts, "dialogs", "--json")
}

// A sandboxed node lost with its tmux server is restored under the same
// profile (kept with its launch, not the default).
func TestSandboxRestoreKeepsProfile(t *testing.T) {
	t.Parallel() // no TMUX_TMPDIR of its own (newSandboxWorld)
	needBwrap(t)
	e := newE2E(t)
	e.env = append(e.env, "HOME="+t.TempDir())
	up, _ := e.up()
	probe := "if cat " + tools.OperatorSessionPath(e.state) + " >/dev/null 2>&1; then echo TOKEN-READ; else echo TOKEN-HIDDEN; fi; echo sandbox=$TERMSPRAWL_SANDBOX start=$(cat /proc/sys/kernel/random/uuid); exec cat"
	id := strings.TrimSpace(e.must(e.ts, "agent", "custom", "--name", "kept", "--sandbox", "guard", "--", "sh", "-c", probe))
	e.waitFor(id, "sandbox=guard start=")
	_, before, _ := e.run(e.ts, "snapshot", id)
	first := regexp.MustCompile(`start=(\S+)`).FindStringSubmatch(before)
	if first == nil {
		t.Fatalf("no start mark:\n%s", before)
	}
	var list tools.NodeList
	json.Unmarshal([]byte(e.must(e.ts, "ls", "--json")), &list)
	socket := ""
	for _, n := range list.Terminals {
		if n.Terminal == id {
			socket = n.TmuxSocket
		}
	}
	e.down(up)
	if _, err := (&tmuxtest.Server{Socket: socket}).Cmd("kill-server"); err != nil {
		t.Fatal(err)
	}
	up2, _ := e.up()
	defer e.down(up2)
	if ls := e.must(e.ts, "ls"); !strings.Contains(ls, "lost") || !strings.Contains(ls, "guard") {
		t.Fatalf("ls of the lost node does not show lost and guard:\n%s", ls)
	}
	e.must(e.ts, "restore", id)
	var snap string
	testenv.Eventually(t, 30*time.Second, func() bool {
		snap = e.screenIfAny(id)
		m := regexp.MustCompile(`start=(\S+)`).FindStringSubmatch(snap)
		return m != nil && m[1] != first[1] && strings.Contains(snap, "sandbox=guard") && strings.Contains(snap, "TOKEN-HIDDEN")
	}, func() string { return "the restored node did not start in guard:\n" + snap })
	json.Unmarshal([]byte(e.must(e.ts, "ls", "--json")), &list)
	for _, n := range list.Terminals {
		if n.Terminal == id && (n.Sandbox != "guard" || n.Status != tools.StatusRunning) {
			t.Fatalf("restored node: sandbox %q status %q, want guard and running", n.Sandbox, n.Status)
		}
	}
}

// Real Claude Code in the default workspace sandbox, in a git worktree:
// it runs a turn against the loopback fake API, its permission prompt
// reaches the human, `allow` from outside lets it write in its worktree,
// its hooks report its state; the same allowed command aimed at the home
// directory cannot write there.
func TestSandboxClaudeCode(t *testing.T) {
	t.Parallel() // no TMUX_TMPDIR of its own (newSandboxWorld)
	needBwrap(t)
	e, fake, home, work := newClaudeE2E(t, claudeCodePackage, markerScript)
	w := sandboxWorld{home: home, repo: filepath.Join(work, "repo")}
	os.MkdirAll(w.repo, 0o755)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = w.repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	up, _ := e.up()
	defer e.down(up)

	for _, c := range []struct {
		name, marker string
		written      bool
	}{
		{"inwt", filepath.Join(w.repo+".worktrees", "inwt", "allowed"), true},
		{"outwt", filepath.Join(w.home, "planted"), false},
	} {
		node := strings.TrimSpace(e.must(e.ts, "agent", "claude", "--name", c.name, "--cwd", w.repo, "--worktree", c.name, "--",
			"claude", "-p", "please create "+c.marker))
		d := e.waitDialog(node, 90*time.Second)
		if d.Kind != "permission" || !strings.HasPrefix(d.Title, "Bash: touch "+c.marker) {
			t.Fatalf("dialog %+v", d)
		}
		if st := e.agentState(node); st.State != tools.AgentWaiting {
			t.Fatalf("agent_status while the dialog is open (the hooks report from the sandbox): %+v", st)
		}
		e.must(e.ts, "answer", d.ID, "allow")
		e.waitExited(node)
		_, err := os.Stat(c.marker)
		if written := err == nil; written != c.written {
			text, _ := toolResultFor(fake, c.marker)
			t.Errorf("%s: allowed `touch %s` wrote: %v, want %v (tool result %q)", c.name, c.marker, written, c.written, text)
		}
		var list tools.NodeList
		json.Unmarshal([]byte(e.must(e.ts, "ls", "--json")), &list)
		for _, n := range list.Terminals {
			if n.Terminal == node && n.Sandbox != "workspace" {
				t.Errorf("%s runs under %q, want the default workspace", node, n.Sandbox)
			}
		}
	}
}

// An agent on a host runs in the host's own bwrap: it sees its own
// session file there, not another node's, and ls shows its profile.
func TestSandboxRemoteHost(t *testing.T) {
	t.Parallel() // no TMUX_TMPDIR of its own (newSandboxWorld)
	needBwrap(t)
	f := sshtest.New(t)
	e := newE2E(t)
	if err := tools.EnsureStateDir(e.state); err != nil {
		t.Fatal(err)
	}
	if err := tools.WriteHosts(e.state, []tools.HostSpec{{Name: "big", Dest: sshtest.Good, SSHOptions: f.SSHOptions(),
		Socket: f.RemoteSocket, RemoteDir: f.RemoteDir("big")}}); err != nil {
		t.Fatal(err)
	}
	up, _, _ := e.upWith("--host", "big="+sshtest.Good, "--host-ctl", "big="+e.ctl)
	defer e.down(up)
	other := strings.TrimSpace(e.must(e.ts, "new", "--host", "big", "--name", "other", "--", "cat"))
	rdir := f.RemoteDir("big")
	probe := "cat $TERMSPRAWL_SESSION_FILE >/dev/null && echo own-ok; if cat " + rdir + "/sessions/" + other + ".json >/dev/null 2>&1; then echo OTHER-READ; else echo other-hidden; fi; echo sandbox=$TERMSPRAWL_SANDBOX; exec sleep 600"
	agent := strings.TrimSpace(e.must(e.ts, "agent", "custom", "--host", "big", "--name", "far-agent", "--", "sh", "-c", probe))
	e.waitFor(agent, "sandbox=workspace")
	_, snap, _ := e.run(e.ts, "snapshot", agent)
	if !strings.Contains(snap, "own-ok") || !strings.Contains(snap, "other-hidden") {
		t.Fatalf("inside the host's sandbox:\n%s", snap)
	}
	var list tools.NodeList
	json.Unmarshal([]byte(e.must(e.ts, "ls", "--json")), &list)
	for _, n := range list.Terminals {
		if n.Terminal == agent && n.Sandbox != "workspace" {
			t.Fatalf("ls --json: %s runs under %q", agent, n.Sandbox)
		}
	}
}
