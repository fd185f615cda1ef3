package toolserver

import (
	"os"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/policy"
	"github.com/termsprawl/termsprawl/tools"
)

func policyHandlers() map[string]handler {
	return map[string]handler{
		"policy_test":  reader(policyTest),
		"audit_list":   reader(auditList),
		"usage_report": reader(usageReport),
		"budget_raise": mutator(budgetRaiseOp),
	}
}

type policyTestArgs struct {
	Request string `json:"request"`
	optionalNodeArg
}

// policyTest says what would decide a request, deciding nothing (and
// auditing nothing).
func policyTest(c *call, a policyTestArgs) (tools.PolicyTest, error) {
	var m orchestrator.NodeMeta
	switch {
	case a.Node != "":
		var ok bool
		if m, ok = c.s.eng.nodes.Meta(a.Node); !ok {
			return tools.PolicyTest{}, tools.Errorf(tools.KindNotFound, "no node %q: see terminal_list", a.Node)
		}
	case c.caller.Role != tools.RoleOperator:
		m, _ = c.s.eng.nodes.Meta(c.caller.Node)
	}
	home, _ := os.UserHomeDir()
	req, err := policy.RequestFromRule(a.Request, m.Cwd, home)
	if err != nil {
		return tools.PolicyTest{}, tools.Errorf(tools.KindUsage, "request: %v", err)
	}
	layers, notes, err := c.s.policyLayers(m)
	if err != nil {
		return tools.PolicyTest{}, tools.Errorf(tools.KindNotRun, "the rules in force do not parse (%v): run termsprawl config", err)
	}
	d := policy.Decide(layers, req)
	out := tools.PolicyTest{Verdict: string(d.Verdict), Rule: d.Rule, Scope: string(d.Scope), Why: d.Why, Node: m.ID, Scopes: []string{}, Notes: notes}
	for _, l := range layers {
		out.Scopes = append(out.Scopes, string(l.Scope))
	}
	if why, paused := c.s.budgetPaused(m); paused && m.ID != "" {
		out.Verdict, out.Rule, out.Scope, out.Why = string(policy.Deny), "", "budget", "budget: "+why+" (the budget's pause denies every request first)"
	}
	return out, nil
}

type auditListArgs struct {
	optionalNodeArg        // resolved, so an agent kept to its host names only what it may read (realm.go); a gone node's id stays as given
	Since           string `json:"since"`
	Limit           int    `json:"limit"`
}

// auditList reads the audit log: every node's for the operator, an
// agent's own only.
func auditList(c *call, a auditListArgs) (tools.AuditList, error) {
	f := policy.Filter{Node: a.Node, Limit: a.Limit}
	if f.Limit == 0 {
		f.Limit = 200
	}
	if c.caller.Role != tools.RoleOperator {
		if a.Node != "" && a.Node != c.caller.Node {
			return tools.AuditList{}, tools.Errorf(tools.KindForbidden, "an agent reads only its own decisions: leave node out or give %q", c.caller.Node)
		}
		f.Node = c.caller.Node
	}
	if a.Since != "" {
		t, err := tools.ParseSinceDays(a.Since, time.Now())
		if err != nil {
			return tools.AuditList{}, err
		}
		f.Since = t
	}
	entries, skipped, err := policy.ReadAudit(c.s.stateDir, f)
	if err != nil {
		return tools.AuditList{}, tools.Errorf(tools.KindNotRun, "%v", err)
	}
	// An empty log answers entries: [] (never null).
	return tools.AuditList{Entries: append(make([]tools.AuditEntry, 0, len(entries)), entries...), Skipped: skipped}, nil
}
