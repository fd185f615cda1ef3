package toolserver

import (
	"cmp"
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/usage"
	"github.com/termsprawl/termsprawl/tools"
)

// Usage (CONTRACT §28): each agent is launched with its telemetry
// pointed at termsprawl's OTLP receiver (usage.Table) and a token of its
// own; its tokens and cost show in terminal_list, agent_status,
// usage_report and the dashboard, `unknown` where it sent nothing.

// telemetryEnv is, per agent kind, the environment that makes it export
// to endpoint with token (nil: the kind exports nothing termsprawl can
// read yet, and its usage stays unknown). A kind that is configured by
// flags or files instead adds its own wiring here.
var telemetryEnv = map[string]func(endpoint, token string) map[string]string{
	// Measured (docs/USAGE.md): Claude Code exports nothing over HTTP
	// unless the protocol is an HTTP one, and sends header values as
	// written (no percent-decoding), so the token needs no escaping.
	"claude": func(endpoint, token string) map[string]string {
		return map[string]string{
			"CLAUDE_CODE_ENABLE_TELEMETRY": "1",
			"OTEL_METRICS_EXPORTER":        "otlp",
			"OTEL_LOGS_EXPORTER":           "otlp",
			"OTEL_EXPORTER_OTLP_PROTOCOL":  "http/protobuf",
			"OTEL_EXPORTER_OTLP_ENDPOINT":  endpoint,
			"OTEL_EXPORTER_OTLP_HEADERS":   usage.Header + "=" + token,
			"OTEL_METRIC_EXPORT_INTERVAL":  strconv.Itoa(int(telemetryInterval / time.Millisecond)),
			"OTEL_LOGS_EXPORT_INTERVAL":    strconv.Itoa(int(telemetryInterval / time.Millisecond)),
			// delta sums: each export adds (cumulative works too)
			"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "delta",
		}
	},
	// Measured with Gemini CLI 0.61.0 (docs/USAGE.md): its own switches
	// turn the OTLP/HTTP exporters on (JSON, to /v1/metrics, /v1/logs and
	// /v1/traces beneath the endpoint); the OpenTelemetry SDK under them
	// takes the header from OTEL_EXPORTER_OTLP_HEADERS. Its sums are
	// cumulative. Prompts are not logged.
	"gemini": func(endpoint, token string) map[string]string {
		return map[string]string{
			"GEMINI_TELEMETRY_ENABLED":       "true",
			"GEMINI_TELEMETRY_TARGET":        "local",
			"GEMINI_TELEMETRY_OTLP_ENDPOINT": endpoint,
			"GEMINI_TELEMETRY_OTLP_PROTOCOL": "http",
			"GEMINI_TELEMETRY_LOG_PROMPTS":   "false",
			"OTEL_EXPORTER_OTLP_HEADERS":     usage.Header + "=" + token,
			"OTEL_METRIC_EXPORT_INTERVAL":    strconv.Itoa(int(telemetryInterval / time.Millisecond)),
		}
	},
}

// telemetryInterval is how often agents export.
const telemetryInterval = 5 * time.Second

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

// agentTelemetry is a launch's telemetry environment and token ("" when
// the kind exports nothing termsprawl reads, or no receiver runs).
func (s *Server) agentTelemetry(kind string) (map[string]string, string) {
	f := telemetryEnv[kind]
	if f == nil || s.usageEndpoint == "" {
		return nil, ""
	}
	tok := s.usage.NewToken(kind)
	return f(s.usageEndpoint, tok), tok
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
