package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/policy"
	"github.com/termsprawl/termsprawl/tools"
)

// bashPermission is Claude Code's PermissionRequest hook JSON for a Bash
// command, as it writes it on the hook's stdin.
func bashPermission(cmd string) string {
	b, _ := json.Marshal(map[string]any{"session_id": "s-1", "cwd": "/tmp", "permission_mode": "default", "hook_event_name": "PermissionRequest",
		"tool_name": "Bash", "tool_input": map[string]any{"command": cmd, "description": "run it"}, "permission_suggestions": []any{}})
	return string(b)
}

// runHookAs runs `termsprawlctl hook claude PermissionRequest` as Claude
// Code does (JSON on stdin), as the node of session.
func (e *e2e) runHookAs(session, stdin string) (int, string, string) {
	e.t.Helper()
	cmd := exec.Command(e.ctl, "--session", session, "hook", "claude", "PermissionRequest")
	cmd.Env = e.env
	cmd.Stdin = strings.NewReader(stdin)
	out, errb := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func lastAuditEntry(t *testing.T, state string) policy.Entry {
	t.Helper()
	l, _, err := policy.ReadAudit(state, policy.Filter{Limit: 1})
	if err != nil || len(l) != 1 {
		t.Fatalf("audit.jsonl: %v %v", l, err)
	}
	return l[0]
}

// TestE2EPolicyHook drives the PermissionRequest hook exactly as Claude
// Code runs it: a fleet rule allows, a deny's reason reaches the model,
// the compound line is denied, what no rule decides waits for a human,
// each decision is in audit.jsonl when the hook returns (also after a
// kill -9 of termsprawl right after it), and a bad config.toml is refused
// at reload (the old rules stay) and at up.
func TestE2EPolicyHook(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	if err := os.MkdirAll(e.state, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(e.state, "config.toml")
	if err := os.WriteFile(conf, []byte("[policy]\nallow = [\"Bash(git status)\", \"Bash(ls:*)\"]\ndeny = [\"Bash(rm:*)\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up, _ := e.up()
	dir := t.TempDir()
	id := strings.TrimSpace(e.must(e.ts, "agent", "custom", "--cwd", dir, "--", "cat"))
	sess := tools.SessionPath(e.state, id)

	code, out, errb := e.runHookAs(sess, bashPermission("git status"))
	if b, _ := hookDecision(t, out); code != 0 || b != "allow" {
		t.Fatalf("git status: exit %d %q %q", code, out, errb)
	}
	if a := lastAuditEntry(t, e.state); a.Node != id || a.Decision != "allow" || a.Rule != "Bash(git status)" || a.Input != `{"command":"git status","description":"run it"}` {
		t.Fatalf("audit: %+v", a)
	}
	code, out, _ = e.runHookAs(sess, bashPermission("git status; rm -rf ~"))
	b, msg := hookDecision(t, out)
	if code != 0 || b != "deny" || !strings.Contains(msg, "policy") || !strings.Contains(msg, "Bash(rm:*)") {
		t.Fatalf("git status; rm -rf ~: exit %d %q", code, out)
	}
	for _, c := range []string{"ls $(whoami)", "ls `id`", "cat <(ls)", "eval ls", "ls > /etc/x", "git status\nwhoami"} {
		// Never allowed by a rule: each waits for a human (a dialog).
		hook := exec.Command(e.ctl, "--session", sess, "hook", "claude", "PermissionRequest")
		hook.Env = append(e.env, "TERMSPRAWL_HOOK_DIALOG_TIMEOUT=1s")
		hook.Stdin = strings.NewReader(bashPermission(c))
		o, err := hook.Output()
		if err != nil {
			t.Fatalf("%q: %v", c, err)
		}
		if b, msg := hookDecision(t, string(o)); b != "deny" || !strings.Contains(msg, "nobody answered") {
			t.Fatalf("%q was decided without a human: %s %s", c, b, msg)
		}
		if a := lastAuditEntry(t, e.state); a.By != "timeout" {
			t.Fatalf("%q: audit %+v", c, a)
		}
	}
	// Unmatched: a dialog as today; the human's answer is audited.
	hook := exec.Command(e.ctl, "--session", sess, "hook", "claude", "PermissionRequest")
	hook.Env = e.env
	hook.Stdin = strings.NewReader(bashPermission("make test"))
	hout := &syncBuffer{}
	hook.Stdout = hout
	if err := hook.Start(); err != nil {
		t.Fatal(err)
	}
	d := e.waitDialog(id, 30*time.Second)
	e.must(e.ts, "answer", d.ID, "allow")
	if err := hook.Wait(); err != nil {
		t.Fatal(err)
	}
	if b, _ := hookDecision(t, hout.String()); b != "allow" {
		t.Fatalf("make test after the human: %q", hout.String())
	}
	if a := lastAuditEntry(t, e.state); a.By != "human" || a.Surface != "cli" || a.Dialog != d.ID {
		t.Fatalf("audit after the human: %+v", a)
	}

	// The CLI: policy test decides nothing; audit shows it all.
	if o := e.must(e.ts, "policy", "test", "Bash(git status; rm -rf ~)", "--node", id); !strings.Contains(o, "DENY") || !strings.Contains(o, "Bash(rm:*)") {
		t.Fatalf("policy test: %s", o)
	}
	if o := e.must(e.ts, "audit", id); !strings.Contains(o, "ALLOW by rule Bash(git status) (fleet)") || !strings.Contains(o, "human (cli)") || !strings.Contains(o, "rm -rf ~") {
		t.Fatalf("audit:\n%s", o)
	}

	// A bad reload: refused with its line, the old rules stay.
	if err := os.WriteFile(conf, []byte("[policy]\nallow = [\"Bash(git status)\"]\ndeny = [\"Bash(\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errb := e.run(e.ts, "config"); code != ExitNo || !strings.Contains(errb, "config.toml:3") || !strings.Contains(errb, "no closing") {
		t.Fatalf("config with Bash(: exit %d %q", code, errb)
	}
	if code, out, _ := e.runHookAs(sess, bashPermission("ls -la")); code != 0 || !strings.Contains(out, `"allow"`) {
		t.Fatalf("after a bad reload the old rules must stay: %q", out)
	}

	// kill -9 right after a decision: the line is there.
	if code, out, _ := e.runHookAs(sess, bashPermission("git status")); code != 0 || !strings.Contains(out, `"allow"`) {
		t.Fatalf("git status: %q", out)
	}
	if err := up.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	up.waitExit(15 * time.Second)
	l, _, _ := policy.ReadAudit(e.state, policy.Filter{Limit: 2})
	if len(l) != 2 || l[1].Input != `{"command":"git status","description":"run it"}` || l[0].Input != `{"command":"ls -la","description":"run it"}` {
		t.Fatalf("after kill -9: %+v", l)
	}

	// up refuses the bad file with its line.
	code, _, errb = e.run(e.ts, "up")
	if code == 0 || !strings.Contains(errb, "config.toml:3") {
		t.Fatalf("up with a bad config.toml: exit %d %q", code, errb)
	}
	for _, bad := range []struct{ body, want string }{
		{"[policy]\nalow = []\n", "unknown key"},
		{"[policy]\nallow = \"Bash(ls)\"\n", "config.toml"},
		{"[[budget]]\nscope = \"fleet\"\ncost_usd = -1.0\n", "budget"},
	} {
		if err := os.WriteFile(conf, []byte(bad.body), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, _, errb := e.run(e.ts, "up"); code == 0 || !strings.Contains(errb, bad.want) {
			t.Fatalf("up with %q: exit %d %q", bad.body, code, errb)
		}
	}
}
