package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const full = `# the contract's example
[sandbox]
default = "workspace"          # agents' profile
shared_caches = ["~/go/pkg/mod"]
hide = ["~/secrets"]
[keys]
detach = "M-F12"
answer = "F12"
[notify]
targets = ["tmux", "webhook=http://127.0.0.1:9/x"]
mode = "normal"
[policy]
allow = ["Bash(git status)", "Bash(npm run test:*)"]
ask = []
deny = ["Bash(rm:*)"]
[policy.kind.codex]
allow = ["Bash(cargo test:*)"]
[policy.named.ci]
allow = [
  "Bash(make:*)",
]
[[budget]]
scope = "fleet"
period = "day"
cost_usd = 20.0
action = "pause"
[[budget]]
scope = "node:n7"
tokens = 100000
work = "2h"
[worktree]
copy_max_file = "1MiB"
copy_max_total = 8388608
[[agent_rule]]
kind = "custom"
state = "waiting"
pattern = '\(y/n\)\s*$'
`

func TestParseFull(t *testing.T) {
	t.Parallel()
	c, err := Parse("/s/config.toml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	if c.Sandbox.Default != SandboxWorkspace || c.Sandbox.SharedCaches[0] != "~/go/pkg/mod" || c.Sandbox.Hide[0] != "~/secrets" {
		t.Errorf("sandbox: %+v", c.Sandbox)
	}
	if c.Keys.Detach != "M-F12" || c.Keys.Answer != "F12" {
		t.Errorf("keys: %+v", c.Keys)
	}
	if len(c.Policy.Allow) != 2 || c.Policy.Deny[0] != "Bash(rm:*)" || c.Policy.Kind["codex"].Allow[0] != "Bash(cargo test:*)" || c.Policy.Named["ci"].Allow[0] != "Bash(make:*)" {
		t.Errorf("policy: %+v", c.Policy)
	}
	if len(c.Budgets) != 2 || *c.Budgets[0].CostUSD != 20 || c.Budgets[0].Action != ActionPause ||
		*c.Budgets[1].Tokens != 100000 || time.Duration(*c.Budgets[1].Work) != 2*time.Hour ||
		c.Budgets[1].Period != PeriodDay || c.Budgets[1].Action != ActionNotify {
		t.Errorf("budgets: %+v", c.Budgets)
	}
	if k, n := c.Budgets[1].ScopeKind(); k != "node" || n != "n7" {
		t.Errorf("scope %q %q", k, n)
	}
	if c.Worktree.CopyMaxFile != 1<<20 || c.Worktree.CopyMaxTotal != 8<<20 {
		t.Errorf("worktree: %+v", c.Worktree)
	}
	if re := c.AgentRules[0].Regexp(); re == nil || !re.MatchString("Continue? (y/n) ") {
		t.Errorf("agent rule: %+v", c.AgentRules[0])
	}
	for key, line := range map[string]int{
		"sandbox.default": 3, "keys.answer": 8, "policy.deny": 15, "policy.kind.codex.allow": 17,
		"policy.named.ci.allow": 19, "budget[0].cost_usd": 25, "budget[1].work": 30, "budget.scope": 23,
		"worktree.copy_max_total": 33, "agent_rule[0].pattern": 37,
	} {
		if got := c.Line(key); got != line {
			t.Errorf("line of %s = %d, want %d", key, got, line)
		}
	}
	if got := c.Source("notify.mode"); got != "config.toml:11" {
		t.Errorf("source of notify.mode = %q", got)
	}
	if got := c.Source("sandbox.default"); got != "config.toml:3" {
		t.Errorf("source of sandbox.default = %q", got)
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if c.Sandbox.Default != SandboxWorkspace || c.Worktree.CopyMaxFile != DefaultCopyMaxFile || c.Worktree.CopyMaxTotal != DefaultCopyMaxTotal {
		t.Errorf("defaults: %+v", c)
	}
	if c.Source("sandbox.default") != "default" {
		t.Errorf("source %q", c.Source("sandbox.default"))
	}
}

func TestRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		line       int
		want       string
	}{
		{"unknown key", "[sandbox]\ndefault = \"guard\"\nhidden = [\"~/x\"]\n", 3, "sandbox.hidden: unknown key"},
		{"unknown table", "[polcy]\nallow = []\n", 1, "polcy: unknown key"},
		{"unknown budget key", "[[budget]]\nscope = \"fleet\"\ncost = 3.0\n", 3, "budget.cost: unknown key"},
		{"wrong type", "[sandbox]\ndefault = 3\n", 2, "sandbox.default: a whole number where a quoted string belongs; write a quoted string"},
		{"wrong type list", "[policy]\n\nallow = \"Bash(ls)\"\n", 3, "policy.allow: a quoted string where a list ([…]) belongs"},
		{"wrong type number", "[[budget]]\nscope = \"fleet\"\ncost_usd = \"20\"\n", 3, "budget.cost_usd: a quoted string where a number belongs"},
		{"syntax", "[sandbox\ndefault = \"x\"\n", 0, "correct the TOML"},
		{"profile", "[sandbox]\n\ndefault = \"jail\"\n", 3, `unknown sandbox profile "jail"`},
		{"relative hide", "[sandbox]\nhide = [\"secrets\"]\n", 2, "not an absolute path"},
		{"dotdot", "[sandbox]\nhide = [\"~/a/../../etc\"]\n", 2, "has a .. in it"},
		{"negative budget", "[[budget]]\nscope = \"fleet\"\ncost_usd = -1.0\n", 3, "-1 is not a budget"},
		{"negative tokens", "[[budget]]\nscope = \"fleet\"\ntokens = -1\n", 3, "-1 is not a budget"},
		{"no limit", "[[budget]]\nscope = \"fleet\"\n", 1, "a budget without a limit"},
		{"bad scope", "[[budget]]\nscope = \"team:x\"\ntokens = 5\n", 2, "unknown budget scope"},
		{"bad action", "[[budget]]\nscope = \"fleet\"\ntokens = 5\naction = \"explode\"\n", 4, "unknown budget action"},
		{"bad work", "[[budget]]\nscope = \"fleet\"\nwork = \"two hours\"\n", 3, "not a duration"},
		{"bad regexp", "[[agent_rule]]\nkind = \"custom\"\nstate = \"idle\"\npattern = '(y/n'\n", 4, "missing closing )"},
		{"bad state", "[[agent_rule]]\nkind = \"custom\"\nstate = \"sleepy\"\npattern = 'x'\n", 3, `unknown state "sleepy"`},
		{"bad key", "[keys]\ndetach = \"ctrl b\"\n", 2, "not a key name"},
		{"unknown key name", "[keys]\n\nanswer = \"Foo\"\n", 3, "keys.answer: \"Foo\" is not a key name"},
		{"no F13", "[keys]\ndetach = \"M-F13\"\n", 2, "not a key name"},
		{"modifier alone", "[keys]\ndetach = \"C-\"\n", 2, "not a key name"},
		{"same keys", "[keys]\ndetach = \"F12\"\nanswer = \"F12\"\n", 3, "the same key"},
		{"bad size", "[worktree]\ncopy_max_file = \"lots\"\n", 2, "not a size"},
		{"file over total", "[worktree]\ncopy_max_file = \"2MiB\"\ncopy_max_total = \"1MiB\"\n", 2, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("/s/config.toml", []byte(tc.text))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			var e *Error
			var es Errors
			switch {
			case errors.As(err, &es):
				for _, x := range es {
					if strings.Contains(x.Error(), tc.want) {
						e = x
					}
				}
			case errors.As(err, &e):
			default:
				t.Fatalf("error %T is not a config error", err)
			}
			if tc.line != 0 && e.Line != tc.line {
				t.Errorf("line %d, want %d (%v)", e.Line, tc.line, err)
			}
			if e.Fix == "" {
				t.Errorf("no fix in %v", err)
			}
		})
	}
}

func TestChecksAddErrors(t *testing.T) {
	t.Parallel()
	check := func(c *Config) []*Error {
		var errs []*Error
		for _, r := range c.Policy.Deny {
			if strings.HasSuffix(r, "(") {
				errs = append(errs, c.Errorf("policy.deny", "close the rule's parenthesis", "bad rule %q", r))
			}
		}
		return errs
	}
	_, err := Parse("/s/config.toml", []byte("[policy]\n\ndeny = [\"Bash(\"]\n"), check)
	if err == nil || !strings.Contains(err.Error(), "/s/config.toml:3: policy.deny: bad rule") {
		t.Fatalf("err = %v", err)
	}
}

func TestSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Size{"64MiB": 64 << 20, "1GiB": 1 << 30, "500KB": 500000, "4096": 4096, "1.5 KiB": 1536} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "5 parsecs", "1e400GiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}

// TestStoreReload: a good change replaces the settings and is heard; a
// bad one leaves them, names its line, and a later good one wins.
func TestStoreReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	write := func(s string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("[sandbox]\ndefault = \"guard\"\n")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Current().Sandbox.Default != SandboxGuard {
		t.Fatalf("default %q", s.Current().Sandbox.Default)
	}
	changed := make(chan string, 4)
	s.OnChange(func(old, cur *Config) { changed <- old.Sandbox.Default + "->" + cur.Sandbox.Default })
	errs := make(chan error, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Watch(ctx, func(err error) { errs <- err }); err != nil {
		t.Fatal(err)
	}
	write("[sandbox]\ndefault = \"none\"\n")
	if got := <-changed; got != "guard->none" {
		t.Fatalf("change %q", got)
	}
	write("[sandbox]\ndefault = \"none\"\nbogus = 1\n")
	if err := <-errs; !strings.Contains(err.Error(), ":3: sandbox.bogus: unknown key") {
		t.Fatalf("bad reload said %v", err)
	}
	if s.Current().Sandbox.Default != SandboxNone || s.LastError() == nil {
		t.Fatalf("a bad reload changed the settings: %q, %v", s.Current().Sandbox.Default, s.LastError())
	}
	write("[sandbox]\ndefault = \"workspace\"\n")
	if got := <-changed; got != "none->workspace" {
		t.Fatalf("change %q", got)
	}
	if s.LastError() != nil {
		t.Fatalf("last error stays: %v", s.LastError())
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(full))
	f.Add([]byte("[[budget]]\nscope='x'\n[a\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse("f.toml", b)
		if err == nil && c.Sandbox.Default == "" {
			t.Fatal("accepted without defaults")
		}
	})
}
