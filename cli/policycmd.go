package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/config"
	"github.com/termsprawl/termsprawl/orchestrator/policy"
	"github.com/termsprawl/termsprawl/tools"
)

// Policies, the audit log and the settings (CONTRACT §28): termsprawl
// config, audit and policy test.

// policyCmds are embedded in the human grammar.
type policyCmds struct {
	Config configCmd `cmd:"" help:"Print the effective settings of <state>/config.toml and where each came from (the file's line, or default); exit 1 if the file is refused."`
	Audit  auditCmd  `cmd:"" help:"Print the audit log: every permission decision (by a rule, a human, an always answer, a timeout, a budget), oldest first."`
	Policy policyCmd `cmd:"" help:"Permission policies: test says what would decide a request and why, deciding nothing."`
	Usage  usageCmd  `cmd:"" help:"Agents' tokens and cost from their telemetry, by node, kind or day (unknown where an agent sent none)."`
	Budget budgetCmd `cmd:"" help:"Raise a node's budgets (config.toml [[budget]]) by a cost, tokens or working time: the human only."`
}

type usageCmd struct {
	Since string `name:"since" placeholder:"D" help:"Only days from D on: a duration back from now (1d, 7d), a date or an RFC 3339 time."`
	By    string `name:"by" enum:"node,kind,day" default:"node" help:"Sum by node, kind or day."`
	JSON  bool   `name:"json" help:"Print usage_report's value as JSON."`
}

func (usageCmd) Examples() string {
	return `termsprawl usage                           # every agent's tokens and cost
termsprawl usage --by day --since 7d       # the last week, day by day
termsprawl usage --by kind --json`
}

type budgetCmd struct {
	Node   string `arg:"" name:"NODE" predictor:"node" help:"The node whose budgets to raise."`
	Cost   string `name:"cost" placeholder:"+DOLLARS" help:"Add this many dollars (+1.50)."`
	Tokens string `name:"tokens" placeholder:"+N" help:"Add this many tokens (+100000)."`
	Work   string `name:"work" placeholder:"+DURATION" help:"Add this much working time (+30m)."`
	JSON   bool   `name:"json" help:"Print the receipt as JSON."`
}

func (budgetCmd) Examples() string {
	return `termsprawl budget build --cost +1.50
termsprawl budget build --tokens +100000 --work +30m`
}

type configCmd struct {
	JSON bool `name:"json" help:"Print the settings as JSON (key → value and source)."`
}

func (configCmd) Examples() string {
	return `termsprawl config                          # every setting, its value and where it came from
termsprawl config --json | jq '.settings[] | select(.source != "default")'`
}

type auditCmd struct {
	Node  string `arg:"" optional:"" name:"NODE" predictor:"node" help:"Only this node's decisions (its id or a unique id prefix)."`
	Since string `name:"since" placeholder:"D" help:"Only decisions since D: a duration back from now (30m, 2h, 1d), a date or an RFC 3339 time."`
	Limit int    `name:"limit" default:"0" help:"At most this many, the newest (default: all)."`
	JSON  bool   `name:"json" help:"Print the entries as JSON lines, exactly as in audit.jsonl."`
}

func (auditCmd) Examples() string {
	return `termsprawl audit                           # every decision
termsprawl audit build --since 2h          # node build's decisions of the last two hours
termsprawl audit --json | jq 'select(.decision=="deny")'`
}

type policyCmd struct {
	Action  string `arg:"" name:"ACTION" enum:"test" help:"test: say what would decide a request given as Tool(input), and why; decides nothing and audits nothing."`
	Request string `arg:"" name:"REQUEST" help:"The request in rule syntax: 'Bash(git status; ls)', 'Edit(src/a.go)', 'WebFetch(https://example.com)'."`
	Node    string `name:"node" placeholder:"N" predictor:"node" help:"Judge it as node N's request (its kind, repository and --policy rules), not with the fleet's rules only."`
	JSON    bool   `name:"json" help:"Print policy_test's value as JSON."`
}

func (policyCmd) Examples() string {
	return `termsprawl policy test 'Bash(git status; rm -rf ~)'
termsprawl policy test 'Bash(npm run test -- --watch)' --node build
termsprawl policy test 'Edit(src/main.go)' --node build`
}

// runPolicyCmd runs config, audit and policy; ok is false for other
// commands.
func (h *human) runPolicyCmd(cmd string, g *humanGrammar) (int, bool) {
	switch cmd {
	case "config":
		return h.configShow(g.Config), true
	case "audit":
		return h.audit(g.Audit), true
	case "policy":
		return h.policyTest(g.Policy), true
	case "usage":
		return h.usage(g.Usage), true
	case "budget":
		return h.budget(g.Budget), true
	}
	return 0, false
}

// configSetting is one line of `termsprawl config`.
type configSetting struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Source string `json:"source"`
}

// configSettings lists the effective settings, in the file's order of
// sections.
func configSettings(c *config.Config) []configSetting {
	var out []configSetting
	add := func(key string, v any) { out = append(out, configSetting{key, v, c.Source(key)}) }
	add("sandbox.default", c.Sandbox.Default)
	add("sandbox.shared_caches", c.Sandbox.SharedCaches)
	add("sandbox.hide", c.Sandbox.Hide)
	add("keys.detach", c.Keys.Detach)
	add("keys.answer", c.Keys.Answer)
	add("notify.targets", c.Notify.Targets)
	add("notify.mode", c.Notify.Mode)
	add("worktree.copy_max_file", c.Worktree.CopyMaxFile)
	add("worktree.copy_max_total", c.Worktree.CopyMaxTotal)
	rules := func(prefix string, r config.Rules) {
		add(prefix+"allow", r.Allow)
		add(prefix+"ask", r.Ask)
		add(prefix+"deny", r.Deny)
	}
	rules("policy.", c.Policy.Rules)
	for _, k := range sortedRuleKeys(c.Policy.Kind) {
		rules("policy.kind."+k+".", c.Policy.Kind[k])
	}
	for _, k := range sortedRuleKeys(c.Policy.Named) {
		rules("policy.named."+k+".", c.Policy.Named[k])
	}
	for i, b := range c.Budgets {
		p := fmt.Sprintf("budget[%d].", i)
		add(p+"scope", b.Scope)
		add(p+"period", b.Period)
		if b.CostUSD != nil {
			add(p+"cost_usd", *b.CostUSD)
		}
		if b.Tokens != nil {
			add(p+"tokens", *b.Tokens)
		}
		if b.Work != nil {
			add(p+"work", time.Duration(*b.Work).String())
		}
		add(p+"action", b.Action)
	}
	for i, r := range c.AgentRules {
		p := fmt.Sprintf("agent_rule[%d].", i)
		add(p+"kind", r.Kind)
		add(p+"state", r.State)
		add(p+"pattern", r.Pattern)
	}
	return out
}

func sortedRuleKeys(m map[string]config.Rules) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (h *human) configShow(c configCmd) int {
	conf, err := config.Load(h.stateDir, configChecks()...)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: %v\n", h.prefix(), err)
		fmt.Fprintf(h.stderr, "%s: the file is refused: fix it (a running termsprawl keeps the settings it had)\n", h.prefix())
		return ExitNo
	}
	settings := configSettings(conf)
	if c.JSON {
		_ = prettyJSON(h.stdout, map[string]any{"file": conf.Path, "settings": settings})
		return ExitOK
	}
	if conf.Path == "" {
		fmt.Fprintf(h.stdout, "# no %s/%s: every setting is the default\n", tools.VisibleLine(h.stateDir), config.FileName)
	} else {
		fmt.Fprintf(h.stdout, "# %s\n", tools.VisibleLine(conf.Path))
	}
	for _, s := range settings {
		v, _ := json.Marshal(s.Value)
		if string(v) == "null" {
			v = []byte("[]") // an empty list
		}
		fmt.Fprintf(h.stdout, "%s = %s  # %s\n", s.Key, tools.VisibleLine(string(v)), s.Source)
	}
	return ExitOK
}

func (h *human) audit(c auditCmd) int {
	f := policy.Filter{Limit: c.Limit}
	if c.Since != "" {
		t, err := tools.ParseSinceDays(c.Since, time.Now())
		if err != nil {
			return usageError(h.stderr, h.prefix(), errors.New(humanize(err.Error())), "")
		}
		f.Since = t
	}
	entries, skipped, err := policy.ReadAudit(h.stateDir, f)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: %v\n", h.prefix(), err)
		return ExitNo
	}
	if c.Node != "" {
		ids := map[string]bool{}
		for _, e := range entries {
			if e.Node == c.Node || strings.HasPrefix(e.Node, c.Node) {
				ids[e.Node] = true
			}
		}
		if len(ids) > 1 && !ids[c.Node] {
			var l []string
			for id := range ids {
				l = append(l, id)
			}
			sort.Strings(l)
			return usageError(h.stderr, h.prefix(), fmt.Errorf("%q is the start of several nodes' ids in the audit log: %s", c.Node, strings.Join(l, ", ")), "")
		}
		kept := entries[:0]
		for _, e := range entries {
			if ids[e.Node] && (e.Node == c.Node || !ids[c.Node]) {
				kept = append(kept, e)
			}
		}
		entries = kept
	}
	if c.JSON {
		for _, e := range entries {
			b, _ := json.Marshal(e)
			fmt.Fprintln(h.stdout, string(b))
		}
		return ExitOK
	}
	if len(entries) == 0 {
		fmt.Fprintln(h.stdout, "no decisions (termsprawl audits permission requests of agents in", policy.AuditFile+")")
	}
	for _, e := range entries {
		who := e.By
		switch e.By {
		case policy.ByRule:
			who = "rule " + e.Rule + " (" + e.Scope + ")"
		case policy.ByHuman:
			who = "human (" + e.Surface + ")"
		}
		fmt.Fprintf(h.stdout, "%s  %s %s  %s by %s  %s\n", e.Time.Local().Format("2006-01-02 15:04:05"), tools.VisibleLine(e.Node), tools.VisibleLine(e.Kind),
			strings.ToUpper(e.Decision), tools.VisibleLine(who), tools.VisibleLine(e.Tool))
		if e.Input != "" {
			fmt.Fprintf(h.stdout, "    input: %s\n", tools.VisibleLine(e.Input))
		}
		fmt.Fprintf(h.stdout, "    why: %s\n", tools.VisibleLine(e.Why))
	}
	if skipped > 0 {
		fmt.Fprintf(h.stderr, "%s: %d lines of the audit log are not decisions and were skipped\n", h.prefix(), skipped)
	}
	return ExitOK
}

func (h *human) policyTest(c policyCmd) int {
	args := map[string]any{"request": c.Request}
	if c.Node != "" {
		args["node"] = c.Node
	}
	if _, err := policy.ParseRule(c.Request); err != nil {
		return usageError(h.stderr, h.prefix(), err, "")
	}
	raw, code := h.prepare("policy_test", args)
	if code != ExitOK {
		return code
	}
	res := tools.Call(h.ctx, h.sessionFile(), tools.Request{Operation: "policy_test", Args: raw}, tools.CallOptions{})
	var out tools.PolicyTest
	switch {
	case res.OK:
		if err := tools.DecodeValue(res.Value, &out); err != nil {
			fmt.Fprintf(h.stderr, "%s: %v\n", h.prefix(), err)
			return ExitNo
		}
	case h.notRunning(res) && c.Node == "":
		// Not running: the fleet's rules of the file, judged here.
		var err error
		if out, err = localPolicyTest(h.stateDir, c.Request); err != nil {
			fmt.Fprintf(h.stderr, "%s: %v\n", h.prefix(), err)
			return ExitNo
		}
	default:
		return h.fail(res)
	}
	if c.JSON {
		_ = prettyJSON(h.stdout, out)
		return ExitOK
	}
	fmt.Fprintf(h.stdout, "%s: %s\n", strings.ToUpper(out.Verdict), tools.VisibleLine(out.Why))
	if out.Rule != "" {
		fmt.Fprintf(h.stdout, "rule: %s (%s)\n", tools.VisibleLine(out.Rule), tools.VisibleLine(out.Scope))
	}
	scopes := strings.Join(out.Scopes, ", ")
	if scopes == "" {
		scopes = "none (no rules)"
	}
	fmt.Fprintf(h.stdout, "scopes with rules: %s\n", tools.VisibleLine(scopes))
	for _, n := range out.Notes {
		fmt.Fprintf(h.stdout, "note: %s\n", tools.VisibleLine(n))
	}
	return ExitOK
}

// localPolicyTest judges a request by the fleet's rules of config.toml,
// for policy test while termsprawl is not running.
func localPolicyTest(stateDir, request string) (tools.PolicyTest, error) {
	conf, err := config.Load(stateDir, policy.CheckConfig)
	if err != nil {
		return tools.PolicyTest{}, err
	}
	wd, _ := os.Getwd()
	home, _ := os.UserHomeDir()
	req, err := policy.RequestFromRule(request, wd, home)
	if err != nil {
		return tools.PolicyTest{}, err
	}
	l, err := policy.NewLayer("fleet", policy.FromConfig(conf.Policy.Rules))
	if err != nil {
		return tools.PolicyTest{}, err
	}
	d := policy.Decide([]policy.Layer{l}, req)
	out := tools.PolicyTest{Verdict: string(d.Verdict), Rule: d.Rule, Scope: string(d.Scope), Why: d.Why, Scopes: []string{},
		Notes: []string{"termsprawl is not running: only the fleet's rules of config.toml were applied (give --node with termsprawl up for a node's)"}}
	if !l.Empty() {
		out.Scopes = append(out.Scopes, "fleet")
	}
	return out, nil
}

// costText is ls's COST: dollars, tokens where an agent reports no cost,
// unknown where it sent nothing, - for shells.
func costText(u *tools.Usage) string {
	switch {
	case u == nil:
		return "-"
	case !u.Known:
		return "unknown"
	case u.Life.CostUSD != nil:
		return fmt.Sprintf("$%.2f", *u.Life.CostUSD)
	}
	return tokensText(u.Life) + " tok"
}

func tokensText(c tools.UsageCounts) string {
	n := c.InputTokens + c.OutputTokens + c.CacheReadTokens + c.CacheCreationTokens
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// usageText is a node's usage in one line.
func agentUsageText(u *tools.Usage) string {
	if !u.Known {
		return "unknown (the agent sent no telemetry)"
	}
	return countsText(u.Life) + " in all; today " + countsText(u.Today)
}

func countsText(c tools.UsageCounts) string {
	s := fmt.Sprintf("%d in, %d out, %d cache read, %d cache written", c.InputTokens, c.OutputTokens, c.CacheReadTokens, c.CacheCreationTokens)
	if c.CostUSD != nil {
		s = fmt.Sprintf("$%.4f, ", *c.CostUSD) + s
	}
	return s
}

func (h *human) usage(c usageCmd) int {
	args := map[string]any{"by": c.By}
	if c.Since != "" {
		args["since"] = c.Since
	}
	r, code := callAs[tools.UsageReport](h, "usage_report", args)
	if code != ExitOK {
		return code
	}
	if c.JSON {
		_ = prettyJSON(h.stdout, r)
		return ExitOK
	}
	if len(r.Rows) == 0 {
		fmt.Fprintln(h.stdout, "no usage yet (agents report it as they work)")
		return ExitOK
	}
	tw := tabwriter.NewWriter(h.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tNODES\tINPUT\tOUTPUT\tCACHE READ\tCACHE WRITE\tCOST\n", strings.ToUpper(r.By))
	for _, row := range r.Rows {
		if !row.Known {
			fmt.Fprintf(tw, "%s\t%d\tunknown\tunknown\tunknown\tunknown\tunknown\n", tools.VisibleLine(row.Key), row.Nodes)
			continue
		}
		cost := "unknown"
		if row.Usage.CostUSD != nil {
			cost = fmt.Sprintf("$%.4f", *row.Usage.CostUSD)
		}
		u := row.Usage
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", tools.VisibleLine(row.Key), row.Nodes, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheCreationTokens, cost)
	}
	_ = tw.Flush()
	return ExitOK
}

func (h *human) budget(c budgetCmd) int {
	args := map[string]any{"node": c.Node}
	if c.Cost != "" {
		if !strings.HasPrefix(c.Cost, "+") {
			return usageError(h.stderr, h.prefix(), fmt.Errorf("--cost %s: a budget is raised, so write +DOLLARS (+1.50)", c.Cost), "")
		}
		args["cost_usd"] = strings.TrimPrefix(c.Cost, "+")
	}
	if c.Tokens != "" {
		n, err := strconv.ParseInt(strings.TrimPrefix(c.Tokens, "+"), 10, 64)
		if err != nil || n <= 0 || !strings.HasPrefix(c.Tokens, "+") {
			return usageError(h.stderr, h.prefix(), fmt.Errorf("--tokens %s: write +N, a positive number of tokens (+100000)", c.Tokens), "")
		}
		args["tokens"] = n
	}
	if c.Work != "" {
		if !strings.HasPrefix(c.Work, "+") {
			return usageError(h.stderr, h.prefix(), fmt.Errorf("--work %s: write +DURATION (+30m)", c.Work), "")
		}
		args["work"] = strings.TrimPrefix(c.Work, "+")
	}
	if len(args) == 1 {
		return usageError(h.stderr, h.prefix(), fmt.Errorf("say what to add: --cost +DOLLARS, --tokens +N or --work +DURATION"), "")
	}
	return mutate(h, "budget_raise", args, c.JSON, func(r tools.BudgetRaised) {
		fmt.Fprintf(h.stdout, "raised node %s's budgets: now +$%.2f, +%d tokens, +%s of work in all\n", r.Node, r.CostUSD, r.Tokens, r.Work)
	})
}
