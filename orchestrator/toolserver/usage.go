package toolserver

import (
	"cmp"
	"context"
	"net/http"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/usage"
	"github.com/termsprawl/termsprawl/tools"
)

// Usage (CONTRACT §28): each agent is launched with its telemetry
// pointed at termsprawl's OTLP receiver (usage.Table) and a token of its
// own; its tokens and cost show in terminal_list, agent_status,
// usage_report and the dashboard, `unknown` where it sent nothing.

// telemetryIntervalMS is how often agents that take it export (ms).
const telemetryIntervalMS = "5000"

// startUsage serves the OTLP receiver on its kept loopback port until
// ctx ends, and saves the table meanwhile (Serve's).
func (s *Server) startUsage(ctx context.Context) error {
	ln, moved, err := usage.Listen(s.stateDir)
	if err != nil {
		return err
	}
	if moved {
		s.log.Warn("the telemetry receiver's port was taken: agents launched before this start report no usage until they are restarted", "addr", ln.Addr().String())
	}
	s.usageEndpoint = usage.Endpoint(ln)
	srv := &http.Server{Handler: s.usage, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go s.usage.Run(ctx, 2*time.Second, func(err error) { s.log.Warn("save usage.json", "err", err) })
	return nil
}

// agentTelemetry is a launch's telemetry from the kind's row of
// agentKinds (agentkinds.go), where what it sets was measured against a
// loopback receiver: arguments for the agent's own program, environment,
// and the token ("" when the kind exports nothing termsprawl reads, or no
// receiver runs).
func (s *Server) agentTelemetry(kind string) (args []string, env map[string]string, token string) {
	k, ok := agentKinds[kind]
	if !ok || k.Telemetry == nil || !k.TelemetryMeasured || s.usageEndpoint == "" {
		return nil, nil, ""
	}
	tok := s.usage.NewToken(kind)
	args, env = k.Telemetry(s.usageEndpoint, usage.Header+"="+tok)
	return args, env, tok
}

// usageOf is an agent's usage for the tables.
func (s *Server) usageOf(node string) *tools.Usage {
	u := s.usage.Node(node)
	out := &tools.Usage{Known: u.Known, Life: usageCounts(u.Life), Today: usageCounts(u.Today), Last: u.Last}
	return out
}

func usageCounts(c usage.Counts) tools.UsageCounts {
	out := tools.UsageCounts{InputTokens: c.Input, OutputTokens: c.Output, CacheReadTokens: c.CacheRead, CacheCreationTokens: c.CacheCreation}
	if c.HasCost {
		v := c.CostUSD
		out.CostUSD = &v
	}
	return out
}

type usageReportArgs struct {
	Since string `json:"since"`
	By    string `json:"by"`
}

// usageReport sums usage by node, kind or day (operator: every node's;
// an agent: its own).
func usageReport(c *call, a usageReportArgs) (tools.UsageReport, error) {
	by := cmp.Or(a.By, "node")
	since := ""
	if a.Since != "" {
		t, err := tools.ParseSinceDays(a.Since, time.Now())
		if err != nil {
			return tools.UsageReport{}, err
		}
		since = t.UTC().Format(time.DateOnly)
	}
	out := tools.UsageReport{By: by, Rows: []tools.UsageRow{}}
	for _, r := range c.s.usage.Report(since, by) {
		if c.caller.Role != tools.RoleOperator && (by != "node" || r.Key != c.caller.Node) {
			continue
		}
		out.Rows = append(out.Rows, tools.UsageRow{Key: r.Key, Known: r.Known, Nodes: r.Nodes, Usage: usageCounts(r.Counts)})
	}
	return out, nil
}
