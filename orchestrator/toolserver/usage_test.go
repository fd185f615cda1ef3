package toolserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/policy"
	"github.com/termsprawl/termsprawl/orchestrator/usage"
	"github.com/termsprawl/termsprawl/tools"
)

// tokenExport is an OTLP export of Claude Code's token and cost sums.
func tokenExport(input int64, cost float64) *metricspb.MetricsData {
	kv := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	delta := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	return &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
		{Name: "claude_code.token.usage", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{AggregationTemporality: delta, IsMonotonic: true,
			DataPoints: []*metricspb.NumberDataPoint{{Attributes: []*commonpb.KeyValue{kv("type", "input")}, Value: &metricspb.NumberDataPoint_AsInt{AsInt: input}}}}}},
		{Name: "claude_code.cost.usage", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{AggregationTemporality: delta, IsMonotonic: true,
			DataPoints: []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: cost}}}}}},
	}}}}}}
}

// telemetryOf launches a claude-kind node whose program prints the
// telemetry environment termsprawl gave it, and returns the node, the
// endpoint and the header.
func telemetryOf(t *testing.T, s *apiServe, op string) (node, endpoint, header string) {
	t.Helper()
	r, _ := apiMutate(t, op, "agent_launch", apiM{"agent": "claude", "cwd": t.TempDir(),
		"command": []string{"bash", "-c", `echo "E=$OTEL_EXPORTER_OTLP_ENDPOINT H=$OTEL_EXPORTER_OTLP_HEADERS P=$OTEL_EXPORTER_OTLP_PROTOCOL T=$CLAUDE_CODE_ENABLE_TELEMETRY"; exec cat`}})
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil {
		t.Fatal(err)
	}
	var snap tools.Snapshot
	testenv.Eventually(t, 30*time.Second, func() bool {
		snap = apiSnapshot(t, op, info.Terminal)
		return strings.Contains(strings.Join(snap.Lines, ""), "T=1")
	}, func() string { return fmt.Sprintf("the node did not print its telemetry environment: %q", snap.Lines) })
	m := regexp.MustCompile(`E=(\S+) H=` + usage.Header + `=(\S+) P=http/protobuf`).FindStringSubmatch(strings.Join(snap.Lines, ""))
	if m == nil {
		t.Fatalf("no telemetry environment on the screen: %q", snap.Lines)
	}
	return info.Terminal, m[1], m[2]
}

func export(t *testing.T, endpoint, token, ctype string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint+"/v1/metrics", bytes.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	if token != "" {
		req.Header.Set(usage.Header, token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestUsageAndBudgets: an agent launched with its telemetry pointed at
// the receiver and a token of its own; hand-made exports in both
// encodings count for it only; another's token or none is refused;
// usage is unknown until sent; budgets reach 80 % (notice) and 100 %
// (notify, pause: permissions denied "budget" and tasks refused; stop:
// closed), audited; only the human raises one.
func TestUsageAndBudgets(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := `[[budget]]
scope = "kind:claude"
period = "day"
tokens = 100
action = "pause"

[[budget]]
scope = "kind:claude"
period = "life"
cost_usd = 1.0
action = "notify"

[[budget]]
scope = "fleet"
period = "life"
tokens = 1000
action = "stop"
`
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	recv, hook := newHookRecv(t, 200)
	s := apiStartWith(t, tmux, dir, orchestrator.Config{Notify: []string{"webhook=" + hook.URL}, NotifyMode: "quiet"})
	op := s.op()
	a, endpoint, tokA := telemetryOf(t, s, op)
	b, _, tokB := telemetryOf(t, s, op)
	if tokA == tokB {
		t.Fatal("two agents got the same telemetry token")
	}
	var st tools.AgentList
	apiOK(t, op, "agent_status", apiM{"node": a}, &st)
	if st.Agents[0].Usage == nil || st.Agents[0].Usage.Known {
		t.Fatalf("usage before anything was sent must be unknown: %+v", st.Agents[0].Usage)
	}

	pb, _ := proto.Marshal(tokenExport(50, 0.3))
	if code := export(t, endpoint, tokA, "application/x-protobuf", pb); code != 200 {
		t.Fatalf("protobuf export: %d", code)
	}
	js, _ := protojson.Marshal(tokenExport(35, 0.5))
	if code := export(t, endpoint, tokA, "application/json", js); code != 200 {
		t.Fatalf("JSON export: %d", code)
	}
	for _, bad := range []string{"", strings.Repeat("0", 48)} {
		if code := export(t, endpoint, bad, "application/x-protobuf", pb); code != 401 {
			t.Fatalf("token %q: %d", bad, code)
		}
	}
	apiOK(t, op, "agent_status", apiM{"node": a}, &st)
	u := st.Agents[0].Usage
	if !u.Known || u.Life.InputTokens != 85 || u.Life.CostUSD == nil || *u.Life.CostUSD < 0.79 || u.Today.InputTokens != 85 {
		t.Fatalf("usage of a: %+v", u)
	}
	if !strings.Contains(st.Agents[0].Budget, "80%") {
		t.Fatalf("budget note at 85 of 100 tokens: %q", st.Agents[0].Budget)
	}
	var l tools.NodeList
	apiOK(t, op, "terminal_list", nil, &l)
	for _, n := range l.Terminals {
		if n.Terminal == b && (n.Usage == nil || n.Usage.Known) {
			t.Fatalf("b's usage: %+v", n.Usage)
		}
	}
	var rep tools.UsageReport
	apiOK(t, op, "usage_report", apiM{"by": "kind"}, &rep)
	if len(rep.Rows) != 1 || rep.Rows[0].Key != "claude" || rep.Rows[0].Usage.InputTokens != 85 {
		t.Fatalf("usage_report by kind: %+v", rep)
	}
	// An agent sees its own row only.
	apiOK(t, s.session(b), "usage_report", nil, &rep)
	for _, r := range rep.Rows {
		if r.Key != b {
			t.Fatalf("b read another's usage: %+v", r)
		}
	}
	entries, _, _ := policy.ReadAudit(dir, policy.Filter{Node: a})
	if len(entries) == 0 || entries[len(entries)-1].By != "budget" || entries[len(entries)-1].Decision != "notify" {
		t.Fatalf("the 80 %% crossing was not audited: %+v", entries)
	}
	// The 80 % notification reaches the notify targets (§20's budget
	// event, sent in every mode, quiet included).
	budgetPosts := func(state string) int {
		recv.mu.Lock()
		defer recv.mu.Unlock()
		n := 0
		for _, p := range recv.posts {
			if p["node"] == a && p["event"] == "budget" && p["state"] == state {
				n++
			}
		}
		return n
	}
	waitFor(t, 20*time.Second, "the 80 % budget notification", func() bool { return budgetPosts("notify") >= 1 })

	// 100 %: pause (a's permissions denied with "budget", no new task)
	// and the cost budget's notify.
	pb, _ = proto.Marshal(tokenExport(20, 0.3))
	if code := export(t, endpoint, tokA, "application/x-protobuf", pb); code != 200 {
		t.Fatal(code)
	}
	out := decided(t, askPermission(t, s.session(a), "ls"))
	if out.Answer.Mode != "deny" || out.DecidedBy != "budget" || !strings.HasPrefix(out.Answer.Reason, "budget") {
		t.Fatalf("a paused node's permission: %+v", out)
	}
	apiFail(t, op, "agent_send", apiM{"node": a, "text": "more work", "message_id": "m1"}, tools.KindNotRun)
	decisions := map[string]bool{}
	entries, _, _ = policy.ReadAudit(dir, policy.Filter{Node: a})
	for _, e := range entries {
		if e.By == "budget" {
			decisions[e.Decision] = true
		}
	}
	if !decisions["pause"] || !decisions["notify"] || !decisions["deny"] {
		t.Fatalf("budget decisions audited: %v", decisions)
	}
	waitFor(t, 20*time.Second, "the 100 % pause notification", func() bool { return budgetPosts("pause") == 1 })
	// Paused: the agent is interrupted (Escape for Claude Code), which
	// its terminal echoes as ^[.
	waitFor(t, 20*time.Second, "the paused agent interrupted", func() bool {
		return strings.Count(strings.Join(apiSnapshot(t, op, a).Lines, "\n"), "^[") == 1
	})
	// Only the human raises it; then a's requests reach a human again.
	apiFail(t, s.session(a), "budget_raise", apiM{"node": a, "tokens": 1000}, tools.KindForbidden)
	apiMutate(t, op, "budget_raise", apiM{"node": a, "tokens": 100})
	if res := askPermission(t, s.session(a), "ls"); res.OK {
		t.Fatalf("after the raise the request should wait for a human: %s", res.Value)
	}

	// stop: the fleet's 1000 tokens (life) closes every agent.
	pb, _ = proto.Marshal(tokenExport(1000, 0))
	if code := export(t, endpoint, tokB, "application/x-protobuf", pb); code != 200 {
		t.Fatal(code)
	}
	testenv.Eventually(t, 30*time.Second, func() bool {
		apiOK(t, op, "terminal_list", nil, &l)
		return len(l.Terminals) == 0
	}, func() string { return fmt.Sprintf("the stop budget left nodes running: %+v", l.Terminals) })
}

// TestWorkBudget: an agent's working time counts against a work budget;
// used up with action pause, its permission requests are denied
// "budget" (policy_test says so first).
func TestWorkBudget(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := "[[budget]]\nscope = \"kind:custom\"\nperiod = \"day\"\nwork = \"1ms\"\naction = \"pause\"\n"
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s := apiStart(t, tmux, dir)
	op := s.op()
	node := policyNode(t, op, t.TempDir(), "")
	sess := s.session(node)
	apiOK(t, sess, "agent_report", apiM{"state": "working"}, nil)
	time.Sleep(5 * time.Millisecond) // a working span longer than the 1 ms budget (not an assertion)
	apiOK(t, sess, "agent_report", apiM{"state": "idle"}, nil)
	var pt tools.PolicyTest
	testenv.Eventually(t, 20*time.Second, func() bool {
		apiOK(t, op, "policy_test", apiM{"request": "Bash(ls)", "node": node}, &pt)
		return pt.Verdict == "deny"
	}, func() string { return fmt.Sprintf("the work budget did not pause the node: %+v", pt) })
	if !strings.Contains(pt.Why, "work") {
		t.Fatalf("policy_test: %+v", pt)
	}
	if out := decided(t, askPermission(t, sess, "ls")); out.Answer.Mode != "deny" || out.DecidedBy != "budget" {
		t.Fatalf("permission of a node over its work budget: %+v", out)
	}
}
