package toolserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/policy"
	"github.com/termsprawl/termsprawl/orchestrator/trust"
	"github.com/termsprawl/termsprawl/tools"
)

const policyConfig = `[policy]
allow = ["Bash(git status)", "Bash(ls:*)", "Bash(whoami)"]
ask = ["Bash(make deploy)"]
deny = ["Bash(rm:*)"]

[policy.kind.custom]
allow = ["Bash(make:*)"]
deny = ["Bash(whoami)"]

[policy.named.ci]
allow = ["Bash(cargo test:*)"]
`

// policyNode launches a custom agent running cat in dir as the operator
// and returns its id, launched with the named policy when given.
func policyNode(t *testing.T, op, dir, named string) string {
	t.Helper()
	args := apiM{"agent": "custom", "command": []string{"cat"}, "cwd": dir}
	if named != "" {
		args["policy"] = named
	}
	r, _ := apiMutate(t, op, "agent_launch", args)
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil || info.Terminal == "" {
		t.Fatalf("launch: %s %v", r.Result, err)
	}
	return info.Terminal
}

// askPermission asks as the hook does (open with wait_ms 1) for a Bash
// command and returns the call's result.
func askPermission(t *testing.T, sess, cmd string) tools.Result {
	t.Helper()
	input, _ := json.Marshal(map[string]string{"command": cmd})
	return apiCall(t, sess, "dialog_request", apiM{"kind": "permission", "tool": "Bash", "input": string(input), "title": "Bash: " + cmd, "timeout_ms": 60000, "wait_ms": 1})
}

func decided(t *testing.T, res tools.Result) tools.DialogOutcome {
	t.Helper()
	var out tools.DialogOutcome
	if !res.OK || json.Unmarshal(res.Value, &out) != nil {
		t.Fatalf("want a decision at once, got ok=%v %s %s (%s)", res.OK, res.Kind, res.Error, res.Value)
	}
	return out
}

// lastAudit is the newest line of the audit log, read from the file.
func lastAudit(t *testing.T, dir string) policy.Entry {
	t.Helper()
	e, _, err := policy.ReadAudit(dir, policy.Filter{Limit: 1})
	if err != nil || len(e) != 1 {
		t.Fatalf("audit.jsonl: %v %v", e, err)
	}
	return e[0]
}

// TestPolicyScopesAndAudit: fleet, kind, repository (only once approved,
// never over a deny) and named scopes decide a node's permission
// requests, deny > ask > allow; what no rule decides opens a dialog;
// every decision is in audit.jsonl when the answer arrives.
func TestPolicyScopesAndAudit(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(policyConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	s := apiStart(t, tmux, dir)
	op := s.op()
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	node := policyNode(t, op, repo, "")
	sess := s.session(node)

	// fleet allow
	out := decided(t, askPermission(t, sess, "git status"))
	if out.Answer.Mode != "allow" || out.DecidedBy != "rule" || out.Rule != "Bash(git status)" || out.Scope != "fleet" || out.Tool != "Bash" {
		t.Fatalf("git status: %+v", out)
	}
	if e := lastAudit(t, dir); e.Node != node || e.Kind != "custom" || e.Decision != "allow" || e.By != "rule" || e.Rule != "Bash(git status)" || e.Input != `{"command":"git status"}` {
		t.Fatalf("audit after git status: %+v", e)
	}
	// the compound line: one denied command denies it all
	out = decided(t, askPermission(t, sess, "git status; rm -rf ~"))
	if out.Answer.Mode != "deny" || out.Rule != "Bash(rm:*)" || !strings.Contains(out.Answer.Reason, "rm") {
		t.Fatalf("git status; rm -rf ~: %+v", out)
	}
	if e := lastAudit(t, dir); e.Decision != "deny" || e.Rule != "Bash(rm:*)" || e.Input != `{"command":"git status; rm -rf ~"}` {
		t.Fatalf("audit after the deny: %+v", e)
	}
	// kind: allow make, and a kind deny wins over the fleet's allow
	if out = decided(t, askPermission(t, sess, "make all && ls")); out.Answer.Mode != "allow" || !strings.Contains(out.Scope, "kind:custom") {
		t.Fatalf("make all && ls: %+v", out)
	}
	if out = decided(t, askPermission(t, sess, "whoami")); out.Answer.Mode != "deny" || out.Scope != "kind:custom" {
		t.Fatalf("whoami: %+v", out)
	}
	// unmatched → a dialog as today; the human's answer is audited with
	// its surface before the waiter hears it
	res := askPermission(t, sess, "cargo test")
	id, _ := res.Details["dialog"].(string)
	if res.OK || id == "" {
		t.Fatalf("cargo test should open a dialog: %s %s", res.Kind, res.Value)
	}
	apiMutate(t, op, "dialog_answer", apiM{"dialog": id, "mode": "allow", "surface": "dashboard"})
	if e := lastAudit(t, dir); e.Decision != "allow" || e.By != "human" || e.Surface != "dashboard" || e.Dialog != id || e.Input != `{"command":"cargo test"}` {
		t.Fatalf("audit after the human: %+v", e)
	}
	var got tools.DialogOutcome
	apiOK(t, sess, "dialog_request", apiM{"dialog": id}, &got)
	if got.DecidedBy != "human" || got.Surface != "dashboard" {
		t.Fatalf("outcome: %+v", got)
	}
	// ask: a dialog even after "always"
	res = askPermission(t, sess, "make deploy")
	id, _ = res.Details["dialog"].(string)
	if res.OK || id == "" {
		t.Fatalf("make deploy (ask) should open a dialog: %s", res.Value)
	}
	apiMutate(t, op, "dialog_answer", apiM{"dialog": id, "mode": "always"})
	if e := lastAudit(t, dir); e.Decision != "allow" || e.By != "always" {
		t.Fatalf("audit after always: %+v", e)
	}
	if res = askPermission(t, sess, "make deploy"); res.OK {
		t.Fatalf("an ask rule must reach a human even after always: %s", res.Value)
	}

	// The repository's file: ignored until approved, then counted, never
	// over a fleet deny, ignored again once changed.
	if err := os.MkdirAll(filepath.Join(repo, ".termsprawl"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeRepo := func(body string) {
		if err := os.WriteFile(filepath.Join(repo, ".termsprawl", "policy.toml"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeRepo("allow = [\"Bash(go test:*)\", \"Bash(rm:*)\"]\n")
	if res = askPermission(t, sess, "go test ./..."); res.OK {
		t.Fatalf("an unapproved repository file counted: %s", res.Value)
	}
	var pt tools.PolicyTest
	apiOK(t, op, "policy_test", apiM{"request": "Bash(go test ./...)", "node": node}, &pt)
	if pt.Verdict != "undecided" || len(pt.Notes) == 0 || !strings.Contains(pt.Notes[0], "termsprawl trust") {
		t.Fatalf("policy_test before approval: %+v", pt)
	}
	if _, err := trust.Open(dir).Approve(repo); err != nil {
		t.Fatal(err)
	}
	if out = decided(t, askPermission(t, sess, "go test ./...")); out.Answer.Mode != "allow" || !strings.HasPrefix(out.Scope, "repository:") {
		t.Fatalf("approved repository file: %+v", out)
	}
	if out = decided(t, askPermission(t, sess, "rm x")); out.Answer.Mode != "deny" || out.Scope != "fleet" {
		t.Fatalf("the repository's allow overruled the fleet's deny: %+v", out)
	}
	writeRepo("allow = [\"Bash(go test:*)\", \"Bash(curl:*)\"]\n")
	if res = askPermission(t, sess, "go test ./..."); res.OK {
		t.Fatalf("a changed repository file still counted: %s", res.Value)
	}

	// named: only the node launched with --policy ci gets its rules
	ci := policyNode(t, op, t.TempDir(), "ci")
	if out = decided(t, askPermission(t, s.session(ci), "cargo test --all")); out.Answer.Mode != "allow" || out.Scope != "node:ci" {
		t.Fatalf("named policy: %+v", out)
	}
	apiOK(t, op, "policy_test", apiM{"request": "Bash(cargo test --all)", "node": node}, &pt)
	if pt.Verdict != "undecided" {
		t.Fatalf("the named policy leaked to another node: %+v", pt)
	}
	apiFail(t, op, "agent_launch", apiM{"agent": "custom", "command": []string{"cat"}, "policy": "nope"}, tools.KindUsage)

	// An agent token changes nothing: it may not name a policy for its
	// launch, answer allow, or read another's audit.
	apiFail(t, sess, "agent_launch", apiM{"agent": "custom", "command": []string{"cat"}, "policy": "ci"}, tools.KindForbidden)
	apiFail(t, sess, "audit_list", apiM{"node": ci}, tools.KindForbidden)
	var own tools.AuditList
	apiOK(t, sess, "audit_list", nil, &own)
	for _, e := range own.Entries {
		if e.Node != node {
			t.Fatalf("an agent read another node's decision: %+v", e)
		}
	}
	if len(own.Entries) < 8 {
		t.Fatalf("audit_list: %d entries", len(own.Entries))
	}
	// policy_test decides nothing and audits nothing
	before, _, _ := policy.ReadAudit(dir, policy.Filter{})
	apiOK(t, sess, "policy_test", apiM{"request": "Bash(git status; rm -rf ~)"}, &pt)
	if pt.Verdict != "deny" || pt.Rule != "Bash(rm:*)" {
		t.Fatalf("policy_test: %+v", pt)
	}
	after, _, _ := policy.ReadAudit(dir, policy.Filter{})
	if len(after) != len(before) {
		t.Fatal("policy_test wrote to the audit log")
	}
}
