package toolserver

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/policy"
	"github.com/termsprawl/termsprawl/orchestrator/trust"
	"github.com/termsprawl/termsprawl/tools"
)

// Permission policies (CONTRACT §28): before a permission dialog opens,
// the rules of the fleet, the node's agent kind, its repository (once a
// human approved that file) and its named table decide; an allow or a
// deny returns at once with the rule and why, an ask or no rule opens
// the dialog as before. Every decision — a rule's, a human's, an
// "always", a timeout — is in the audit log before the asker hears it.
// Nothing here depends on the agent kind: any hook that opens a
// permission dialog with a tool and its input is decided the same way.

// repoPolicyName is the name the trust store knows a repository's
// policy file by.
const repoPolicyName = trust.PolicyFile

// policyLayers are the layers that apply to a node, and notes on what
// did not count (a repository file not approved, a named table that is
// not there).
func (s *Server) policyLayers(m orchestrator.NodeMeta) ([]policy.Layer, []string, error) {
	settings := s.conf.Current().Policy
	var layers []policy.Layer
	var notes []string
	add := func(scope policy.Scope, r policy.Rules) error {
		l, err := policy.NewLayer(scope, r)
		if err != nil {
			return err
		}
		if !l.Empty() {
			layers = append(layers, l)
		}
		return nil
	}
	if err := add("fleet", policy.FromConfig(settings.Rules)); err != nil {
		return nil, notes, err
	}
	if m.Agent != "" {
		if err := add(policy.Scope("kind:"+m.Agent), policy.FromConfig(settings.Kind[m.Agent])); err != nil {
			return nil, notes, err
		}
	}
	if m.Cwd != "" && m.Host == "" {
		checkout, repo := repoRoots(m.Cwd)
		if checkout != "" {
			b, err := policy.ReadRepoFile(checkout)
			switch {
			case err != nil:
				notes = append(notes, fmt.Sprintf("%s of %s not read: %v", policy.RepoFile, checkout, err))
			case b == nil:
			case !(s.trust.Check(repo, repoPolicyName, b) || (checkout != repo && s.trust.Check(checkout, repoPolicyName, b))):
				notes = append(notes, fmt.Sprintf("%s of %s does not count: a human has not approved this content (termsprawl trust %s)", policy.RepoFile, checkout, repo))
			default:
				r, err := policy.ParseRepoFile(b)
				if err != nil {
					notes = append(notes, fmt.Sprintf("%s of %s does not count: %v", policy.RepoFile, checkout, err))
				} else if err := add(policy.Scope("repository:"+repo), r); err != nil {
					notes = append(notes, err.Error())
				}
			}
		}
	}
	if m.Policy != "" {
		r, ok := settings.Named[m.Policy]
		if !ok {
			notes = append(notes, fmt.Sprintf("the node's policy %q is not in config.toml ([policy.named.%s]): its rules do not count", m.Policy, m.Policy))
		} else if err := add(policy.Scope("node:"+m.Policy), policy.FromConfig(r)); err != nil {
			return nil, notes, err
		}
	}
	return layers, notes, nil
}

// repoRoots finds the git checkout dir is in (the directory with .git)
// and the repository's main worktree (the same for a plain clone; for a
// linked worktree, the directory its common git dir belongs to).
func repoRoots(dir string) (checkout, repo string) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Lstat(filepath.Join(d, ".git"))
		if err == nil {
			checkout = d
			if st.IsDir() {
				return d, d
			}
			// A linked worktree: .git is "gitdir: <repo>/.git/worktrees/NAME".
			b, err := os.ReadFile(filepath.Join(d, ".git"))
			if err != nil {
				return d, d
			}
			gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
			if !ok {
				return d, d
			}
			if !filepath.IsAbs(gitdir) {
				gitdir = filepath.Join(d, gitdir)
			}
			common := filepath.Join(gitdir, "commondir")
			if c, err := os.ReadFile(common); err == nil {
				cd := strings.TrimSpace(string(c))
				if !filepath.IsAbs(cd) {
					cd = filepath.Join(gitdir, cd)
				}
				return d, filepath.Dir(filepath.Clean(cd))
			}
			return d, d
		}
		if d == filepath.Dir(d) {
			return "", ""
		}
	}
}

// decidePermission lets the policies decide a permission request of a
// node before a dialog opens. decided: the outcome is final (allow or
// deny, audited). ask: a rule says a human decides even where an
// "always" answer would allow.
func (s *Server) decidePermission(c *call, a dialogRequestArgs) (out tools.DialogOutcome, decided, ask bool, err error) {
	if c.caller.Role == tools.RoleOperator || a.Tool == "" {
		return out, false, false, nil
	}
	m, ok := s.eng.nodes.Meta(c.caller.Node)
	if !ok || m.Incarnation() != c.caller.Incarnation {
		return out, false, false, nil
	}
	base := tools.DialogOutcome{Kind: a.Kind, Tool: a.Tool, Input: a.Input}
	if why, paused := s.budgetPaused(m); paused {
		out = base
		out.Answer = tools.DialogAnswer{Mode: tools.AnswerDeny, Reason: "budget: " + why}
		out.DecidedBy = tools.DecidedByBudget
		if err := s.audit.Append(policy.Entry{Node: m.ID, Kind: m.Agent, Tool: a.Tool, Input: a.Input, Decision: "deny", By: policy.ByBudget, Why: out.Answer.Reason}); err != nil {
			return tools.DialogOutcome{}, false, false, auditErr(err)
		}
		return out, true, false, nil
	}
	layers, _, err := s.policyLayers(m)
	if err != nil {
		// A broken rule decides nothing: the human does.
		s.log.Warn("policy rules", "node", m.ID, "err", err)
		return out, false, false, nil
	}
	if len(layers) == 0 {
		return out, false, false, nil
	}
	home, _ := os.UserHomeDir()
	d := policy.Decide(layers, policy.Request{Tool: a.Tool, Input: []byte(cmp.Or(a.Input, "{}")), Dir: m.Cwd, Home: home, Cwd: a.Cwd})
	switch d.Verdict {
	case policy.Allow, policy.Deny:
		out = base
		mode := tools.AnswerAllow
		if d.Verdict == policy.Deny {
			mode = tools.AnswerDeny
		}
		out.Answer = tools.DialogAnswer{Mode: mode, Reason: d.Why}
		out.DecidedBy, out.Rule, out.Scope = tools.DecidedByRule, d.Rule, string(d.Scope)
		if err := s.audit.Append(policy.Entry{Node: m.ID, Kind: m.Agent, Tool: a.Tool, Input: a.Input, Decision: mode, By: policy.ByRule, Rule: d.Rule, Scope: string(d.Scope), Why: d.Why}); err != nil {
			return tools.DialogOutcome{}, false, false, auditErr(err)
		}
		return out, true, false, nil
	case policy.Ask:
		return out, false, true, nil
	}
	return out, false, false, nil
}

// auditErr: a decision that cannot be audited is not given (the hook
// denies what it cannot get an answer for).
func auditErr(err error) error {
	return tools.Errorf(tools.KindNotRun, "termsprawl cannot write the audit log, so it decides nothing (%v): free space in the state dir", err).WithDetails("cause", err.Error())
}

// dialogDecided audits a permission dialog's end, before its waiter is
// told (dialogTable.onDecided).
func (s *Server) dialogDecided(d tools.Dialog, out tools.DialogOutcome) {
	if d.Kind != "permission" {
		return
	}
	kind := ""
	if m, ok := s.eng.nodes.Meta(d.Node); ok {
		kind = m.Agent
	}
	by := cmp.Or(out.DecidedBy, policy.ByHuman)
	e := policy.Entry{Node: d.Node, Kind: kind, Tool: d.Tool, Input: d.Input, Decision: out.Answer.Mode, By: by, Surface: out.Surface, Dialog: d.ID, Why: out.Answer.Reason}
	if e.Decision == tools.AnswerAlways {
		e.Decision, e.By = tools.AnswerAllow, policy.ByAlways
		e.Why = cmp.Or(e.Why, "always allowed by the human") + " (remembered for this node's life)"
	}
	if err := s.audit.Append(e); err != nil {
		s.log.Error("audit a dialog's answer", "dialog", d.ID, "err", err)
	}
}

// budgetPaused says whether a budget paused the node (budget.go).
func (s *Server) budgetPaused(m orchestrator.NodeMeta) (string, bool) {
	if s.budgets == nil {
		return "", false
	}
	return s.budgetPausedNow(m)
}

// auditRemembered audits a request an earlier "always" answer allowed.
func (s *Server) auditRemembered(c *call, a dialogRequestArgs) error {
	if a.Kind != "permission" {
		return nil
	}
	kind := ""
	if m, ok := s.eng.nodes.Meta(c.caller.Node); ok {
		kind = m.Agent
	}
	if err := s.audit.Append(policy.Entry{Node: c.caller.Node, Kind: kind, Tool: a.Tool, Input: a.Input, Decision: tools.AnswerAllow, By: policy.ByAlways,
		Why: "a human answered \"always\" to this exact request earlier in this node's life"}); err != nil {
		return auditErr(err)
	}
	return nil
}

// launchPolicy checks a launch's named policy: the operator names any
// table of config.toml; an agent's launch gets the agent's own and may
// name no other (a child never gets rules its parent lacks).
func (c *call) launchPolicy(name string) (string, error) {
	if c.caller.Role != tools.RoleOperator {
		own := ""
		if m, ok := c.s.eng.nodes.Meta(c.caller.Node); ok {
			own = m.Policy
		}
		if name != "" && name != own {
			return "", tools.Errorf(tools.KindForbidden, "an agent's launch gets its own policy (%q): it may not name policy %q; the human launches with --policy", own, name)
		}
		return own, nil
	}
	if name == "" {
		return "", nil
	}
	if _, ok := c.s.conf.Current().Policy.Named[name]; !ok {
		return "", tools.Errorf(tools.KindUsage, "no policy %q: config.toml has no [policy.named.%s] table (add one, or run termsprawl config to see the tables)", name, name)
	}
	return name, nil
}
