package tools

// policyOperations are the rows of permission policies and the audit
// log (CONTRACT §28). Nothing here changes a rule: config.toml is the
// human's file, and no operation writes it.
func policyOperations() []*Operation {
	return []*Operation{
		{Name: "policy_test", Result: PolicyTest{}, Topic: TopicDialogs, Annotations: annRead,
			Description: "Say what would decide a permission request and why, deciding nothing: request is Tool(input) in Claude Code's rule syntax (`Bash(git status; ls)`, `Edit(src/a.go)`, `WebFetch(https://x.org)`); node applies that node's kind, repository and named policy (default: yours, or only the fleet's rules for the operator).",
			Params: []Param{
				required(Param{Name: "request", Type: TypeString, NonEmpty: true, MaxLen: 64 << 10, Description: "The request as Tool(input), e.g. Bash(npm run test -- --watch)."}),
				{Name: "node", Type: TypeString, NonEmpty: true, MaxLen: MaxNameBytes, Description: "Judge it as this node's request: its id, else its name when unique, else a unique id prefix."},
			}},
		{Name: "audit_list", Result: AuditList{}, Topic: TopicDialogs, Annotations: annRead,
			Description: "The audit log's decisions on permission requests (by a rule, a human, an \"always\", a timeout, a budget), oldest first: the operator reads every node's, an agent only its own.",
			Params: []Param{
				{Name: "node", Type: TypeString, NonEmpty: true, MaxLen: MaxNameBytes, Description: "Only this node's decisions (id)."},
				{Name: "since", Type: TypeString, NonEmpty: true, MaxLen: 64, Description: "Only decisions at or after this time: RFC 3339, or a duration back from now (30m, 2h, 1d)."},
				intParam("limit", "At most this many, the newest (default 200, max 10000).", intPtr(1), intPtr(10000)),
			}},
		{Name: "usage_report", Result: UsageReport{}, Topic: TopicAgents, Annotations: annRead,
			Description: "Agents' tokens (input, output, cache) and cost from their telemetry, summed by node, agent kind or UTC day; known false where an agent sent none (unknown, never 0). The operator sees every node's; an agent its own row.",
			Params: []Param{
				{Name: "since", Type: TypeString, NonEmpty: true, MaxLen: 64, Description: "Only days from this one on: a date, RFC 3339, or a duration back from now (1d, 7d)."},
				enumParam("by", "Sum by node (default), kind or day.", "node", "kind", "day"),
			}},
		{Name: "budget_raise", Result: BudgetRaised{}, State: BudgetRaised{}, Topic: TopicAgents, Mutation: true, Annotations: annWrite,
			Description: "Operator only (the human): raise a node's budgets (config.toml [[budget]]) by a cost, a number of tokens or working time; a paused node goes on once under its limits. An agent's token is refused.",
			Params: []Param{
				{Name: "node", Type: TypeString, Required: true, NonEmpty: true, MaxLen: MaxNameBytes, Description: "The node: its id, else its name when unique, else a unique id prefix."},
				{Name: "cost_usd", Type: TypeString, NonEmpty: true, MaxLen: 32, Description: "Dollars to add, a decimal (1.50)."},
				{Name: "tokens", Type: TypeInteger, Min: intPtr(0), Description: "Tokens to add."},
				{Name: "work", Type: TypeString, NonEmpty: true, MaxLen: 32, Description: "Working time to add: a Go duration (30m, 2h)."},
			}},
	}
}
