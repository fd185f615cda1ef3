package usage

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

func post(t *testing.T, tab *Table, path, ctype, token string, body io.Reader, length int64) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, body)
	r.ContentLength = length
	r.Header.Set("Content-Type", ctype)
	if token != "" {
		r.Header.Set(Header, token)
	}
	w := httptest.NewRecorder()
	tab.ServeHTTP(w, r)
	return w
}

func newTable(t *testing.T) (*Table, string) {
	t.Helper()
	tab, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tab.now = func() time.Time { return time.Date(2026, 12, 7, 6, 11, 3, 0, time.UTC) }
	tok := tab.NewToken("claude")
	tab.Bind(tok, "n1")
	return tab, tok
}

// TestClaudeCodeExports: the bodies real Claude Code 2.1.332 sent during
// one turn (testdata, captured with termsprawl's settings) in both
// encodings count 10 input and 5 output tokens and $0.00014.
func TestClaudeCodeExports(t *testing.T) {
	t.Parallel()
	for _, enc := range []struct{ file, ctype string }{{"testdata/claude-metrics.pb", "application/x-protobuf"}, {"testdata/claude-metrics.json", "application/json"}} {
		tab, tok := newTable(t)
		b, err := os.ReadFile(enc.file)
		if err != nil {
			t.Fatal(err)
		}
		if w := post(t, tab, "/v1/metrics", enc.ctype, tok, bytes.NewReader(b), int64(len(b))); w.Code != 200 {
			t.Fatalf("%s: %d %s", enc.file, w.Code, w.Body)
		}
		s := tab.Node("n1")
		if !s.Known || s.Life.Input != 10 || s.Life.Output != 5 || s.Life.CostUSD < 0.00013 || s.Life.CostUSD > 0.00015 || !s.Life.HasCost {
			t.Fatalf("%s: %+v", enc.file, s)
		}
		lf := strings.Replace(strings.Replace(enc.file, "metrics", "logs", 1), ".json", ".json", 1)
		if lb, err := os.ReadFile(lf); err == nil {
			if w := post(t, tab, "/v1/logs", enc.ctype, tok, bytes.NewReader(lb), int64(len(lb))); w.Code != 200 {
				t.Fatalf("%s: %d %s", lf, w.Code, w.Body)
			}
		}
		if s2 := tab.Node("n1"); s2.Life != s.Life {
			t.Fatalf("logs changed the counts: %+v", s2)
		}
	}
}

func kv(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// handMade is an export of a token sum: cumulative or delta.
func handMade(kind string, cumulative bool, input int64) *metricspb.MetricsData {
	temp := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	if cumulative {
		temp = metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	}
	return &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
		{Name: kind + ".token.usage", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{AggregationTemporality: temp, IsMonotonic: true,
			DataPoints: []*metricspb.NumberDataPoint{{Attributes: []*commonpb.KeyValue{kv("type", "input")}, StartTimeUnixNano: 1, Value: &metricspb.NumberDataPoint_AsInt{AsInt: input}}}}}},
		{Name: "unrelated.metric", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{}}},
	}}}}}}
}

// TestHandMadeExports: protobuf and JSON, delta and cumulative; another
// node's token, none, garbage and a 100 MB body are refused.
func TestHandMadeExports(t *testing.T) {
	t.Parallel()
	tab, tok := newTable(t)
	other := tab.NewToken("claude")
	tab.Bind(other, "n2")
	pb, _ := proto.Marshal(handMade("claude_code", false, 100))
	js, _ := protojson.Marshal(handMade("claude_code", false, 7))
	if w := post(t, tab, "/v1/metrics", "application/x-protobuf", tok, bytes.NewReader(pb), int64(len(pb))); w.Code != 200 {
		t.Fatal(w.Code, w.Body)
	}
	if w := post(t, tab, "/v1/metrics", "application/json", tok, bytes.NewReader(js), int64(len(js))); w.Code != 200 || w.Body.String() != "{}" {
		t.Fatal(w.Code, w.Body)
	}
	if s := tab.Node("n1"); s.Life.Input != 107 || s.Life.HasCost {
		t.Fatalf("delta: %+v", s)
	}
	// cumulative: 50 then 80 adds 80 in all
	for _, v := range []int64{50, 80} {
		b, _ := proto.Marshal(handMade("claude_code", true, v))
		post(t, tab, "/v1/metrics", "application/x-protobuf", other, bytes.NewReader(b), int64(len(b)))
	}
	if s := tab.Node("n2"); s.Life.Input != 80 {
		t.Fatalf("cumulative: %+v", s)
	}
	if s := tab.Node("n1"); s.Life.Input != 107 {
		t.Fatalf("n2's token counted for n1: %+v", s)
	}
	for _, c := range []struct {
		name, path, ctype, token string
		body                     []byte
		want                     int
	}{
		{"no token", "/v1/metrics", "application/x-protobuf", "", pb, 401},
		{"unknown token", "/v1/metrics", "application/x-protobuf", strings.Repeat("a", 48), pb, 401},
		{"garbage protobuf", "/v1/metrics", "application/x-protobuf", tok, []byte("\xff\xff\xff garbage"), 400},
		{"garbage JSON", "/v1/metrics", "application/json", tok, []byte(`{"resourceMetrics": 3`), 400},
		{"wrong type", "/v1/metrics", "text/plain", tok, pb, 415},
		{"wrong path", "/v1/other", "application/x-protobuf", tok, pb, 404},
	} {
		if w := post(t, tab, c.path, c.ctype, c.token, bytes.NewReader(c.body), int64(len(c.body))); w.Code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, w.Code, w.Body, c.want)
		}
	}
	// 100 MB, announced and not: refused without reading it all.
	big := io.LimitReader(zeros{}, 100<<20)
	if w := post(t, tab, "/v1/metrics", "application/x-protobuf", tok, big, 100<<20); w.Code != 413 {
		t.Fatalf("100 MB announced: %d", w.Code)
	}
	cr := &countingReader{r: io.LimitReader(zeros{}, 100<<20)}
	if w := post(t, tab, "/v1/metrics", "application/x-protobuf", tok, cr, -1); w.Code != 413 || cr.n > MaxBody+64<<10 {
		t.Fatalf("100 MB chunked: %d after reading %d bytes", w.Code, cr.n)
	}
	// A token not yet bound: retry.
	pending := tab.NewToken("claude")
	if w := post(t, tab, "/v1/metrics", "application/x-protobuf", pending, bytes.NewReader(pb), int64(len(pb))); w.Code != 503 {
		t.Fatalf("pending: %d", w.Code)
	}
	// Bearer forms exporters send.
	r := httptest.NewRequest(http.MethodPost, "/v1/metrics", bytes.NewReader(pb))
	r.Header.Set("Content-Type", "application/x-protobuf")
	r.Header.Set("Authorization", "Bearer%20"+tok)
	w := httptest.NewRecorder()
	tab.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Fatalf("Bearer%%20: %d", w.Code)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestUnknownUntilSent, report rows and persistence.
func TestTableReportAndSave(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tab, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := tab.NewToken("claude")
	tab.Bind(a, "a")
	g := tab.NewToken("gemini")
	tab.Bind(g, "g")
	if tab.Node("a").Known || tab.Node("nobody").Known {
		t.Fatal("known before anything was sent")
	}
	b, _ := proto.Marshal(handMade("claude_code", false, 40))
	post(t, tab, "/v1/metrics", "application/x-protobuf", a, bytes.NewReader(b), int64(len(b)))
	rows := tab.Report("", "node")
	if len(rows) != 2 || rows[0].Key != "a" || !rows[0].Known || rows[1].Key != "g" || rows[1].Known {
		t.Fatalf("rows: %+v", rows)
	}
	if k := tab.Report("", "kind"); len(k) != 1 || k[0].Key != "claude" || k[0].Counts.Input != 40 {
		t.Fatalf("by kind: %+v", k)
	}
	if err := tab.Save(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s := again.Node("a"); s.Life.Input != 40 {
		t.Fatalf("after reopening: %+v", s)
	}
	if _, _, st := again.identify(a); st != 200 {
		t.Fatal("the token did not survive a restart")
	}
	again.Forget("a")
	if _, _, st := again.identify(a); st != 401 {
		t.Fatal("a forgotten node's token still counts")
	}
	// A restored node's kept environment carries the token: adopted again.
	again.Adopt(a, "a", "claude")
	if node, _, st := again.identify(a); st != 200 || node != "a" {
		t.Fatal("a restored node's token was not adopted")
	}
}

func FuzzDecode(f *testing.F) {
	pb, _ := proto.Marshal(handMade("claude_code", true, 3))
	js, _ := protojson.Marshal(handMade("claude_code", false, 3))
	f.Add(pb, false)
	f.Add(js, true)
	f.Fuzz(func(t *testing.T, b []byte, isJSON bool) {
		tab, tok := newTable(t)
		ct := "application/x-protobuf"
		if isJSON {
			ct = "application/json"
		}
		w := post(t, tab, "/v1/metrics", ct, tok, bytes.NewReader(b), int64(len(b)))
		if w.Code != 200 && w.Code != 400 {
			t.Fatalf("status %d", w.Code)
		}
		if s := tab.Node("n1"); s.Life.Input < 0 || s.Life.CostUSD < 0 {
			t.Fatalf("negative usage: %+v", s)
		}
	})
}
