package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/policy"
	"github.com/termsprawl/termsprawl/tools"
)

// scopesConfig has a rule at each scope, and the pairs that show the
// precedence: whoami (fleet allow, kind deny), make deploy (fleet allow
// make:*, fleet ask), curl (kind ask, fleet deny).
const scopesConfig = `[policy]
allow = ["Bash(git status)", "Bash(ls:*)", "Bash(echo:*)", "Bash(cat:*)", "Bash(grep:*)", "Bash(whoami)", "Bash(make:*)"]
ask = ["Bash(make deploy)"]
deny = ["Bash(rm:*)", "Bash(curl:*)"]

[policy.kind.custom]
allow = ["Bash(npm test)"]
ask = ["Bash(curl:*)"]
deny = ["Bash(whoami)"]

[policy.named.ci]
allow = ["Bash(cargo test:*)"]
`

// hookOutcome is how a permission hook ended: "allow", "deny" (a rule or
// a budget decided: the message says so) or "dialog" (it waited for a
// human, who did not answer within the test's dialog timeout).
func hookOutcome(t *testing.T, stdout string) (string, string) {
	t.Helper()
	b, msg := hookDecision(t, stdout)
	if b == "deny" && strings.Contains(msg, "nobody answered") {
		return "dialog", msg
	}
	return b, msg
}

// hookCase is one request of the table and how it must end.
type hookCase struct {
	session, dir, cmd string
	want              string // allow, deny or dialog
	scope             string // the audited scope of a rule's decision
	rule              string // the audited rule
}

// runHookCases runs Claude Code's PermissionRequest hook for each case
// at once (its JSON on stdin, exactly as Claude Code runs it, with the
// node's cwd); what no rule decides waits for a human, which nobody is
// here, so it ends at a short dialog timeout. Each decision must be in
// audit.jsonl by the time its hook returns.
func (e *e2e) runHookCases(cases []hookCase) {
	e.t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6)
	for _, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			payload, _ := json.Marshal(map[string]any{"session_id": "s-1", "cwd": c.dir, "permission_mode": "default", "hook_event_name": "PermissionRequest",
				"tool_name": "Bash", "tool_input": map[string]any{"command": c.cmd, "description": "run it"}, "permission_suggestions": []any{}})
			hook := exec.Command(e.ctl, "--session", c.session, "hook", "claude", "PermissionRequest")
			hook.Env = append(append([]string(nil), e.env...), "TERMSPRAWL_HOOK_DIALOG_TIMEOUT=2s")
			hook.Stdin = strings.NewReader(string(payload))
			out, err := hook.Output()
			if err != nil {
				e.t.Errorf("%q: the hook failed: %v %s", c.cmd, err, out)
				return
			}
			got, msg := hookOutcome(e.t, string(out))
			if got != c.want {
				e.t.Errorf("%q: %s (%s), want %s", c.cmd, got, msg, c.want)
				return
			}
			if got == "deny" && !strings.Contains(msg, "policy") {
				e.t.Errorf("%q: the deny does not name the policy: %s", c.cmd, msg)
			}
			input, _ := json.Marshal(map[string]any{"command": c.cmd, "description": "run it"})
			canon, _ := tools.CanonicalJSON(input)
			entries, _, err := policy.ReadAudit(e.state, policy.Filter{})
			if err != nil {
				e.t.Errorf("audit.jsonl: %v", err)
				return
			}
			wantBy := map[string]string{"allow": policy.ByRule, "deny": policy.ByRule, "dialog": policy.ByTimeout}[c.want]
			for _, a := range entries {
				if a.Input == canon && a.By == wantBy && (c.scope == "" || a.Scope == c.scope) && (c.rule == "" || a.Rule == c.rule) {
					return
				}
			}
			e.t.Errorf("%q: no audit line by %s (scope %q, rule %q) when the hook returned", c.cmd, wantBy, c.scope, c.rule)
		}()
	}
	wg.Wait()
}

// TestE2EPolicyScopesThroughHook drives the PermissionRequest hook as
// Claude Code runs it and shows each scope (fleet, agent kind, the
// repository's file once approved with `termsprawl trust`, a node's
// --policy) and the precedence (deny > ask > allow, whatever the scope);
// the compound-command table (;, &&, ||, |, $(…), backticks, <(…), eval,
// redirections in and out of the node's directory, newlines, comments);
// each decision audited when the hook returns; and that nothing the
// agent's token can do changes a decision.
func TestE2EPolicyScopesThroughHook(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (apt-get install git)")
	}
	e := newE2E(t)
	if err := os.MkdirAll(e.state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.state, "config.toml"), []byte(scopesConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	up, _ := e.up()
	defer e.down(up)
	repo := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(filepath.Join(repo, ".termsprawl"), 0o700); err != nil {
		t.Fatal(err)
	}
	git := exec.Command("git", "init", "-q", repo)
	git.Env = append(e.env, "GIT_CONFIG_NOSYSTEM=1")
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	repo, _ = filepath.EvalSymlinks(repo)
	other := t.TempDir()
	a := strings.TrimSpace(e.must(e.ts, "agent", "custom", "--name", "a", "--sandbox", "none", "--cwd", repo, "--", "cat"))
	b := strings.TrimSpace(e.must(e.ts, "agent", "custom", "--name", "b", "--sandbox", "none", "--policy", "ci", "--cwd", other, "--", "cat"))
	sa, sb := tools.SessionPath(e.state, a), tools.SessionPath(e.state, b)

	A := func(cmd, want string) hookCase { return hookCase{session: sa, dir: repo, cmd: cmd, want: want} }
	scoped := func(c hookCase, scope, rule string) hookCase { c.scope, c.rule = scope, rule; return c }
	e.runHookCases([]hookCase{
		// each scope
		scoped(A("git status", "allow"), "fleet", "Bash(git status)"),
		scoped(A("npm test", "allow"), "kind:custom", "Bash(npm test)"),
		scoped(hookCase{session: sb, dir: other, cmd: "cargo test --all", want: "allow"}, "node:ci", "Bash(cargo test:*)"),
		A("cargo test --all", "dialog"), // the named table is b's only
		// precedence
		scoped(A("whoami", "deny"), "kind:custom", "Bash(whoami)"),     // kind deny over fleet allow
		A("make deploy", "dialog"),                                     // ask over allow
		scoped(A("make all", "allow"), "fleet", "Bash(make:*)"),        // the allow without the ask
		scoped(A("curl example.com", "deny"), "fleet", "Bash(curl:*)"), // deny over (kind) ask
		A("cargo build", "dialog"),                                     // no rule: a human
		// the compound-command table
		A("git status; ls -la", "allow"),
		scoped(A("git status; rm -rf ~", "deny"), "fleet", "Bash(rm:*)"),
		A("git status; cargo build", "dialog"),
		A("git status && ls", "allow"),
		A("ls && rm x", "deny"),
		A("git status || ls", "allow"),
		A("ls || rm x", "deny"),
		A("git status || cargo build", "dialog"),
		A("ls | grep x", "allow"),
		A("ls | sh", "dialog"),
		A("ls $(git status)", "dialog"),
		A("ls `git status`", "dialog"),
		A("cat <(ls)", "dialog"),
		A("eval ls", "dialog"),
		A("eval 'rm -rf ~'", "dialog"),
		A("echo hi > out.txt", "allow"),
		A("echo hi > "+filepath.Join(repo, "sub", "out.txt"), "allow"),
		A("cat < in.txt", "allow"),
		A("echo hi > /etc/termsprawl-x", "dialog"),
		A("echo hi > ../x", "dialog"),
		A("cat < /etc/shadow", "dialog"),
		A("cd /etc && echo hi > x", "dialog"),
		// where the agent's shell is (the hook's cwd) places a relative
		// redirection: from /etc it is outside, from a subdirectory in
		{session: sa, dir: "/etc", cmd: "echo hi > passwd", want: "dialog"},
		{session: sa, dir: filepath.Join(repo, "sub"), cmd: "echo hi > ../y", want: "allow"},
		A("git status\nls", "allow"),
		A("git status\nrm -rf ~", "deny"),
		A("git status\ncargo build", "dialog"),
		A("git status # rm -rf ~", "allow"),
		A("# git status", "dialog"),
	})
	if t.Failed() {
		return
	}

	// The repository's file: ignored until the human approves it with
	// termsprawl trust; then counted, never over the fleet's deny; a
	// changed file is ignored again until approved again.
	policyFile := filepath.Join(repo, ".termsprawl", "policy.toml")
	if err := os.WriteFile(policyFile, []byte("allow = [\"Bash(go test:*)\", \"Bash(rm:*)\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.runHookCases([]hookCase{A("go test ./...", "dialog")})
	// An agent may not approve it: termsprawl trust refuses inside a node.
	trustEnv := append(append([]string(nil), e.env...), SessionEnv+"="+sa)
	cmd := exec.Command(e.ts, "trust", repo)
	cmd.Env = trustEnv
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "human") {
		t.Fatalf("termsprawl trust inside a node: %v %s", err, out)
	}
	e.runHookCases([]hookCase{A("go test ./...", "dialog")})
	if out := e.must(e.ts, "trust", repo); !strings.Contains(out, "policy.toml") {
		t.Fatalf("termsprawl trust: %s", out)
	}
	e.runHookCases([]hookCase{
		scoped(A("go test ./...", "allow"), "repository:"+repo, "Bash(go test:*)"),
		scoped(A("rm x", "deny"), "fleet", "Bash(rm:*)"),
		A("go test ./... && rm x", "deny"),
	})
	if err := os.WriteFile(policyFile, []byte("allow = [\"Bash(go test:*)\", \"Bash(cargo build)\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.runHookCases([]hookCase{A("go test ./...", "dialog"), A("cargo build", "dialog")})

	// The agent's token changes nothing: it cannot allow its own request,
	// raise a budget, or launch with a policy not its own.
	hook := exec.Command(e.ctl, "--session", sa, "hook", "claude", "PermissionRequest")
	hook.Env = e.env
	hook.Stdin = strings.NewReader(bashPermission("cargo build --release"))
	hout := &syncBuffer{}
	hook.Stdout = hout
	if err := hook.Start(); err != nil {
		t.Fatal(err)
	}
	d := e.waitDialog(a, 30*time.Second)
	for _, c := range []struct{ op, args, want string }{
		{"dialog_answer", `{"dialog":"` + d.ID + `","mode":"allow"}`, "agents may only deny"},
		{"dialog_answer", `{"dialog":"` + d.ID + `","mode":"always"}`, "agents may only deny"},
		{"budget_raise", `{"node":"` + a + `","tokens":1000}`, "forbidden"},
		{"agent_launch", `{"agent":"custom","command":["cat"],"policy":"ci"}`, "forbidden"},
	} {
		code, out, errb := e.run(e.ctl, "--session", sa, "call", c.op, c.args)
		if code == 0 || !strings.Contains(out+errb, c.want) {
			t.Errorf("an agent's %s %s: exit %d %s%s", c.op, c.args, code, out, errb)
		}
	}
	e.must(e.ts, "answer", d.ID, "deny")
	if err := hook.Wait(); err != nil {
		t.Fatal(err)
	}
	if got, _ := hookDecision(t, hout.String()); got != "deny" {
		t.Fatalf("after the agent's tries and the human's deny: %q", hout.String())
	}
	if l := lastAuditEntry(t, e.state); l.By != policy.ByHuman || l.Decision != "deny" || l.Surface != "cli" {
		t.Fatalf("audit: %+v", l)
	}
}
