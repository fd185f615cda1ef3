package toolserver

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/config"
	"github.com/termsprawl/termsprawl/orchestrator/notify"
	"github.com/termsprawl/termsprawl/orchestrator/policy"
	"github.com/termsprawl/termsprawl/tools"
)

// Budgets (CONTRACT §28): config.toml's [[budget]]s over the usage table
// (cost, tokens) and agents' working time. At 80 % a notification, at
// 100 % the action: notify, pause (the node's permission requests are
// denied with the reason "budget", agent_send refuses it, it is
// interrupted once) or stop (the node is closed). Each crossing is
// audited and shown in agent_status (budget). A human raises a node's
// limits with budget_raise; the raise adds to every budget judging that
// node.

// budgetsFile keeps the raises and the crossings already acted on.
const budgetsFile = "budgets.json"

// budgetRaise is what a human added to a node's limits.
type budgetRaise struct {
	CostUSD float64       `json:"cost_usd,omitempty"`
	Tokens  int64         `json:"tokens,omitempty"`
	Work    time.Duration `json:"work,omitempty"`
}

type budgetState struct {
	mu sync.Mutex // guards raises, fired, work and the file
	// raises by node id.
	raises map[string]budgetRaise
	// fired: crossings acted on, by budgetKey+level ("80", "100").
	fired map[string]bool
	// work is each node's working time by UTC day, from its agent state.
	work map[string]map[string]time.Duration
	path string
}

type budgetsOnDisk struct {
	Raises map[string]budgetRaise              `json:"raises"`
	Fired  map[string]bool                     `json:"fired"`
	Work   map[string]map[string]time.Duration `json:"work"`
}

func newBudgetState(dir string) *budgetState {
	b := &budgetState{raises: map[string]budgetRaise{}, fired: map[string]bool{}, work: map[string]map[string]time.Duration{}, path: filepath.Join(dir, budgetsFile)}
	if raw, err := os.ReadFile(b.path); err == nil {
		var d budgetsOnDisk
		if json.Unmarshal(raw, &d) == nil {
			for k, v := range d.Raises {
				b.raises[k] = v
			}
			for k, v := range d.Fired {
				b.fired[k] = v
			}
			for k, v := range d.Work {
				b.work[k] = v
			}
		}
	}
	return b
}

// saveLocked writes budgets.json (atomically, 0600).
func (b *budgetState) saveLocked() error {
	raw, err := json.Marshal(budgetsOnDisk{Raises: b.raises, Fired: b.fired, Work: b.work})
	if err != nil {
		return err
	}
	tmp := b.path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, b.path)
}

// addWork adds a span of working time to a node (agentstate.go calls it
// when a node stops working).
func (s *Server) addWork(node string, from, to time.Time) {
	if from.IsZero() || !to.After(from) {
		return
	}
	b := s.budgets
	b.mu.Lock()
	day := to.UTC().Format(time.DateOnly)
	if b.work[node] == nil {
		b.work[node] = map[string]time.Duration{}
	}
	b.work[node][day] += to.Sub(from)
	_ = b.saveLocked()
	b.mu.Unlock()
	s.usageGrew(node)
}

// budgetApplies: does budget bg judge node m, and under which key (the
// scope and period the crossing is counted for)?
func budgetApplies(bg config.Budget, m orchestrator.NodeMeta) bool {
	kind, name := bg.ScopeKind()
	switch kind {
	case "fleet":
		return m.Agent != ""
	case "kind":
		return m.Agent == name
	case "node":
		return m.ID == name
	}
	return false
}

// budgetUse is what a budget measured and its limits for one node.
type budgetUse struct {
	cost, costLimit    float64
	tokens, tokenLimit int64
	work, workLimit    time.Duration
	ratio              float64 // the largest used/limit
	measure            string  // which measure is at ratio
}

// measure sums a budget's scope over its period, with node's raise.
func (s *Server) measure(bg config.Budget, m orchestrator.NodeMeta, now time.Time) budgetUse {
	return s.judge(bg, s.scopeSums(bg, now), s.raiseOf(m.ID))
}

// scopeSums is a budget's scope's cost, tokens and working time over its
// period (the same for every node the budget judges).
func (s *Server) scopeSums(bg config.Budget, now time.Time) budgetUse {
	kind, name := bg.ScopeKind()
	keep := func(node, k string) bool {
		switch kind {
		case "kind":
			return k == name
		case "node":
			return node == name
		}
		return true
	}
	day := ""
	if bg.Period == config.PeriodDay {
		day = now.UTC().Format(time.DateOnly)
	}
	c := s.usage.Sum(day, keep)
	var u budgetUse
	u.cost, u.tokens = c.CostUSD, c.Tokens()
	b := s.budgets
	b.mu.Lock()
	work := make(map[string]time.Duration, len(b.work))
	for node, days := range b.work {
		for d, w := range days {
			if day == "" || d == day {
				work[node] += w
			}
		}
	}
	b.mu.Unlock()
	for node, w := range work {
		if kind == "kind" {
			if nm, _ := s.eng.budget.Meta(node); nm.Agent != name {
				continue
			}
		}
		if keep(node, name) {
			u.work += w
		}
	}
	return u
}

func (s *Server) raiseOf(node string) budgetRaise {
	s.budgets.mu.Lock()
	defer s.budgets.mu.Unlock()
	return s.budgets.raises[node]
}

// judge is the use against the budget's limits raised by raise.
func (s *Server) judge(bg config.Budget, u budgetUse, raise budgetRaise) budgetUse {
	check := func(used, limit float64, what string) {
		if limit > 0 && used/limit > u.ratio {
			u.ratio, u.measure = used/limit, what
		}
	}
	if bg.CostUSD != nil && *bg.CostUSD > 0 {
		u.costLimit = *bg.CostUSD + raise.CostUSD
		check(u.cost, u.costLimit, fmt.Sprintf("cost $%.2f of $%.2f", u.cost, u.costLimit))
	}
	if bg.Tokens != nil && *bg.Tokens > 0 {
		u.tokenLimit = *bg.Tokens + raise.Tokens
		check(float64(u.tokens), float64(u.tokenLimit), fmt.Sprintf("%d tokens of %d", u.tokens, u.tokenLimit))
	}
	if bg.Work != nil && *bg.Work > 0 {
		u.workLimit = time.Duration(*bg.Work) + raise.Work
		check(float64(u.work), float64(u.workLimit), fmt.Sprintf("work %s of %s", u.work.Round(time.Second), u.workLimit))
	}
	return u
}

// budgetKey names one budget's crossing for one node and period.
func budgetKey(i int, bg config.Budget, node string, now time.Time) string {
	period := "life"
	if bg.Period == config.PeriodDay {
		period = now.UTC().Format(time.DateOnly)
	}
	return fmt.Sprintf("%d|%s|%s|%s|%s", i, bg.Scope, bg.Action, node, period)
}

func budgetLabel(bg config.Budget) string {
	return fmt.Sprintf("budget %s per %s", bg.Scope, bg.Period)
}

// budgetPausedNow says whether a pause budget has node at 100 %.
func (s *Server) budgetPausedNow(m orchestrator.NodeMeta) (string, bool) {
	now := time.Now()
	for _, bg := range s.conf.Current().Budgets {
		if bg.Action != config.ActionPause || !budgetApplies(bg, m) {
			continue
		}
		if u := s.measure(bg, m, now); u.ratio >= 1 {
			return fmt.Sprintf("%s is used up (%s); a human raises it with termsprawl budget %s", budgetLabel(bg), u.measure, m.ID), true
		}
	}
	return "", false
}

// budgetNote is agent_status's budget line for a node ("" when no budget
// is at 80 %).
func (s *Server) budgetNote(node string) string {
	m, ok := s.eng.budget.Meta(node)
	if !ok || m.Agent == "" {
		return ""
	}
	now := time.Now()
	var notes []string
	for _, bg := range s.conf.Current().Budgets {
		if !budgetApplies(bg, m) {
			continue
		}
		u := s.measure(bg, m, now)
		switch {
		case u.ratio >= 1:
			notes = append(notes, fmt.Sprintf("%s used up (%s): %s", budgetLabel(bg), u.measure, bg.Action))
		case u.ratio >= 0.8:
			notes = append(notes, fmt.Sprintf("%s at %d%% (%s)", budgetLabel(bg), int(u.ratio*100), u.measure))
		}
	}
	return strings.Join(notes, "; ")
}

// usageGrew judges the budgets of every node a change may concern (the
// node's own, and for fleet and kind budgets every agent of the scope).
func (s *Server) usageGrew(node string) {
	if s.conf == nil || len(s.conf.Current().Budgets) == 0 {
		return
	}
	changed, ok := s.eng.budget.Meta(node)
	if !ok {
		return
	}
	now := time.Now()
	for i, bg := range s.conf.Current().Budgets {
		if !budgetApplies(bg, changed) {
			continue
		}
		kind, _ := bg.ScopeKind()
		targets := []orchestrator.NodeMeta{changed}
		if kind != "node" {
			targets = nil
			for _, m := range s.eng.budget.Nodes() {
				if budgetApplies(bg, m) {
					targets = append(targets, m)
				}
			}
		}
		base := s.scopeSums(bg, now) // once per budget, not per node
		for _, m := range targets {
			u := s.judge(bg, base, s.raiseOf(m.ID))
			for _, level := range []struct {
				at   float64
				name string
			}{{0.8, "80"}, {1, "100"}} {
				if u.ratio < level.at {
					continue
				}
				key := budgetKey(i, bg, m.ID, now) + "|" + level.name
				s.budgets.mu.Lock()
				done := s.budgets.fired[key]
				s.budgets.fired[key] = true
				if !done {
					_ = s.budgets.saveLocked()
				}
				s.budgets.mu.Unlock()
				if done {
					continue
				}
				s.budgetCrossed(bg, m, u, level.name == "100")
			}
		}
	}
}

// budgetCrossed acts on a crossing: audit, notify, and at 100 % the
// action.
func (s *Server) budgetCrossed(bg config.Budget, m orchestrator.NodeMeta, u budgetUse, full bool) {
	decision, why := "notify", fmt.Sprintf("%s at %d%%: %s", budgetLabel(bg), int(u.ratio*100), u.measure)
	if full {
		decision = bg.Action
		why = fmt.Sprintf("%s used up: %s; action %s (termsprawl budget %s raises it)", budgetLabel(bg), u.measure, bg.Action, m.ID)
	}
	if err := s.audit.Append(policy.Entry{Node: m.ID, Kind: m.Agent, Decision: decision, By: policy.ByBudget, Scope: bg.Scope, Why: why}); err != nil {
		s.log.Error("audit a budget", "node", m.ID, "err", err)
	}
	if s.notifier != nil {
		s.notifier.Notify(notify.Event{Node: m.ID, Name: m.Name, Kind: m.Agent, Event: notify.EventBudget, State: decision,
			Title: fmt.Sprintf("%s: %s", m.ID, budgetLabel(bg)), Text: why, Answer: "termsprawl budget " + m.ID + " --cost +N",
			At: time.Now().UTC().Format(time.RFC3339)})
	}
	if !full {
		return
	}
	// The action runs on its own goroutine (ends within 30 s, or at
	// shutdown): the export that crossed the line is answered at once.
	go s.budgetAct(bg, m)
}

// budgetAct interrupts (pause) or closes (stop) a node whose budget is
// used up.
func (s *Server) budgetAct(bg config.Budget, m orchestrator.NodeMeta) {
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	switch bg.Action {
	case config.ActionPause:
		key := "C-c"
		if m.Agent == "claude" || m.Agent == "codex" || m.Agent == "gemini" || m.Agent == "opencode" {
			key = "Escape" // their interrupt; Ctrl+C would end them
		}
		if _, err := s.eng.budget.Press(ctx, m.ID, key, nil); err != nil {
			s.log.Warn("budget: interrupt", "node", m.ID, "err", err)
		}
	case config.ActionStop:
		if err := s.eng.budget.CloseNode(ctx, m.ID); err != nil {
			s.log.Warn("budget: stop", "node", m.ID, "err", err)
		}
	}
}

type budgetRaiseArgs struct {
	nodeArg
	CostUSD string `json:"cost_usd"`
	Tokens  int64  `json:"tokens"`
	Work    string `json:"work"`
}

// budgetRaiseOp raises a node's limits: the human only.
func budgetRaiseOp(c *call, a budgetRaiseArgs) (tools.BudgetRaised, any, error) {
	if c.caller.Role != tools.RoleOperator {
		return tools.BudgetRaised{}, nil, tools.Errorf(tools.KindForbidden, "only the human raises a budget (termsprawl budget NODE --cost +N): an agent cannot")
	}
	var work time.Duration
	var cost float64
	if a.CostUSD != "" {
		v, err := strconv.ParseFloat(strings.TrimPrefix(a.CostUSD, "+"), 64)
		if err != nil || v <= 0 || math.IsInf(v, 0) || v > 1e9 {
			return tools.BudgetRaised{}, nil, tools.Errorf(tools.KindUsage, "cost_usd %q is not a positive number of dollars (1.50)", a.CostUSD)
		}
		cost = v
	}
	if a.Work != "" {
		w, err := time.ParseDuration(a.Work)
		if err != nil || w <= 0 {
			return tools.BudgetRaised{}, nil, tools.Errorf(tools.KindUsage, "work %q is not a positive duration (30m, 2h)", a.Work)
		}
		work = w
	}
	if a.Tokens < 0 || (cost == 0 && a.Tokens == 0 && work == 0) {
		return tools.BudgetRaised{}, nil, tools.Errorf(tools.KindUsage, "give what to add: cost_usd, tokens or work, each positive")
	}
	b := c.s.budgets
	b.mu.Lock()
	r := b.raises[a.Node]
	r.CostUSD += cost
	r.Tokens += a.Tokens
	r.Work += work
	b.raises[a.Node] = r
	// The crossings of this node are judged again against the new limits.
	for k := range b.fired {
		if strings.Contains(k, "|"+a.Node+"|") {
			delete(b.fired, k)
		}
	}
	err := b.saveLocked()
	b.mu.Unlock()
	if err != nil {
		return tools.BudgetRaised{}, nil, tools.Errorf(tools.KindNotRun, "save %s: %v", budgetsFile, err)
	}
	m, _ := c.s.eng.budget.Meta(a.Node)
	_ = c.s.audit.Append(policy.Entry{Node: a.Node, Kind: m.Agent, Decision: "raise", By: policy.ByHuman, Surface: "cli",
		Why: fmt.Sprintf("the human raised the node's budgets by $%.2f, %d tokens, %s of work (now $%.2f, %d, %s in all)", cost, a.Tokens, work, r.CostUSD, r.Tokens, r.Work)})
	go c.s.usageGrew(a.Node)
	out := tools.BudgetRaised{Node: a.Node, CostUSD: r.CostUSD, Tokens: r.Tokens, Work: r.Work.String()}
	return out, out, nil
}
