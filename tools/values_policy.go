package tools

import (
	"strconv"
	"time"
)

// PolicyTest is policy_test's value: what would decide a request.
type PolicyTest struct {
	// Verdict is allow, deny, ask (a human decides even where a rule
	// allows) or undecided (no rule: a human decides).
	Verdict string `json:"verdict"`
	Rule    string `json:"rule,omitempty"`
	Scope   string `json:"scope,omitempty"`
	Why     string `json:"why"`
	// Node is the node whose scopes applied ("" for the fleet's only).
	Node string `json:"node,omitempty"`
	// Scopes are the scopes that had rules, in order.
	Scopes []string `json:"scopes"`
	// Notes say what did not count (a repository file not approved, a
	// named table that is not there).
	Notes []string `json:"notes,omitempty"`
}

// AuditEntry is one decision of the audit log (<state>/audit.jsonl).
type AuditEntry struct {
	Time time.Time `json:"time"`
	Node string    `json:"node"`
	// Kind is the agent kind ("claude", "codex", …; "" for a shell).
	Kind string `json:"kind,omitempty"`
	Tool string `json:"tool,omitempty"`
	// Input is the tool's full input (canonical JSON text).
	Input string `json:"input,omitempty"`
	// Decision is allow, deny, ask (a dialog opened) or an action
	// (pause, stop, notify) for a budget.
	Decision string `json:"decision"`
	By       string `json:"by"`
	Rule     string `json:"rule,omitempty"`
	Scope    string `json:"scope,omitempty"`
	// Surface is where a human answered: cli, dashboard, picker, mcp.
	Surface string `json:"surface,omitempty"`
	Dialog  string `json:"dialog,omitempty"`
	Why     string `json:"why"`
}

// AuditList is audit_list's value.
type AuditList struct {
	Entries []AuditEntry `json:"entries"`
	// Skipped counts lines of the log that are not entries.
	Skipped int `json:"skipped,omitempty"`
}

// ParseSinceDays reads a --since of the audit and usage: ParseSince's
// forms (a duration back from now, RFC 3339), a date (2026-12-07), or
// days or weeks back from now (1d, 2w).
func ParseSinceDays(s string, now time.Time) (time.Time, error) {
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if n := len(s); n > 1 && (s[n-1] == 'd' || s[n-1] == 'w') {
		if v, err := strconv.Atoi(s[:n-1]); err == nil && v >= 0 && v <= 100000 {
			unit := 24 * time.Hour
			if s[n-1] == 'w' {
				unit *= 7
			}
			return now.Add(-time.Duration(v) * unit), nil
		}
	}
	t, err := ParseSince(s, now)
	if err != nil {
		return time.Time{}, Errorf(KindUsage, "since %q is not a time: give a duration back from now (30m, 2h, 1d), a date (2026-12-07) or an RFC 3339 time", s)
	}
	return t, nil
}

// UsageCounts are tokens and cost (CONTRACT §28).
type UsageCounts struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheReadTokens     int64 `json:"cache_read_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_tokens"`
	// CostUSD is absent where the agent reports tokens but no cost.
	CostUSD *float64 `json:"cost_usd,omitempty"`
}

// Usage is an agent's usage from its telemetry. Known is false where the
// agent sent none: its usage is unknown, never 0.
type Usage struct {
	Known bool        `json:"known"`
	Life  UsageCounts `json:"life"`
	// Today is the current UTC day's.
	Today UsageCounts `json:"today"`
	// Last is when telemetry last arrived.
	Last time.Time `json:"last,omitzero"`
}

// UsageRow is one row of usage_report: a node, an agent kind or a day.
type UsageRow struct {
	Key   string      `json:"key"`
	Known bool        `json:"known"`
	Nodes int         `json:"nodes"`
	Usage UsageCounts `json:"usage"`
}

// UsageReport is usage_report's value.
type UsageReport struct {
	By   string     `json:"by"`
	Rows []UsageRow `json:"rows"`
}

// BudgetRaised is budget_raise's value: the node's raises in all.
type BudgetRaised struct {
	Node    string  `json:"node"`
	CostUSD float64 `json:"cost_usd"`
	Tokens  int64   `json:"tokens"`
	Work    string  `json:"work"`
}
