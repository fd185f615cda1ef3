package usage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
)

// File is the table's file in the state directory.
const File = "usage.json"

// Counts are tokens and cost.
type Counts struct {
	Input         int64   `json:"input"`
	Output        int64   `json:"output"`
	CacheRead     int64   `json:"cache_read"`
	CacheCreation int64   `json:"cache_creation"`
	CostUSD       float64 `json:"cost_usd"`
	// HasCost: the agent reports cost (Gemini CLI sends tokens only).
	HasCost bool `json:"has_cost,omitempty"`
}

// Tokens is every token counted.
func (c Counts) Tokens() int64 { return c.Input + c.Output + c.CacheRead + c.CacheCreation }

func (c *Counts) add(o Counts) {
	c.Input += o.Input
	c.Output += o.Output
	c.CacheRead += o.CacheRead
	c.CacheCreation += o.CacheCreation
	c.CostUSD += o.CostUSD
	c.HasCost = c.HasCost || o.HasCost
}

// nodeUsage is one node's usage, by UTC day.
type nodeUsage struct {
	Kind string             `json:"kind"`
	Days map[string]*Counts `json:"days"`
	// Usage: usage metrics arrived (else `unknown`); Last: when anything
	// (metrics or logs) last arrived.
	Usage bool      `json:"usage,omitempty"`
	Last  time.Time `json:"last,omitzero"`
	Logs  int64     `json:"logs,omitempty"`
}

type tokenEntry struct {
	Node string `json:"node"` // "" until Bind
	Kind string `json:"kind"`
}

// Table is the usage of every node and the telemetry tokens.
type Table struct {
	path string
	now  func() time.Time

	mu     sync.Mutex // guards tokens, nodes, last and dirty
	tokens map[string]tokenEntry
	nodes  map[string]*nodeUsage
	// last is a cumulative series' last value (node, metric, attributes,
	// start): what it adds is the difference.
	last  map[string]float64
	dirty bool

	// OnAdd, when set before use, hears of each node whose usage grew
	// (budgets), on the receiving goroutine, under no lock.
	OnAdd func(node string)
}

type onDisk struct {
	Tokens map[string]tokenEntry `json:"tokens"`
	Nodes  map[string]*nodeUsage `json:"nodes"`
	Last   map[string]float64    `json:"last,omitempty"`
}

// Open reads <dir>/usage.json (a missing file is an empty table).
func Open(dir string) (*Table, error) {
	t := &Table{path: filepath.Join(dir, File), now: time.Now, tokens: map[string]tokenEntry{}, nodes: map[string]*nodeUsage{}, last: map[string]float64{}}
	b, err := os.ReadFile(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.path, err)
	}
	var d onDisk
	if err := json.Unmarshal(b, &d); err != nil {
		// A broken file loses the history, not the run.
		return t, fmt.Errorf("%s is not a usage table (%v): starting a new one", t.path, err)
	}
	for k, v := range d.Tokens {
		t.tokens[k] = v
	}
	for k, v := range d.Nodes {
		if v != nil {
			if v.Days == nil {
				v.Days = map[string]*Counts{}
			}
			t.nodes[k] = v
		}
	}
	for k, v := range d.Last {
		t.last[k] = v
	}
	return t, nil
}

// NewToken makes a telemetry token for an agent of kind about to launch
// (its node is bound with Bind once known; until then its exports are
// told to retry).
func (t *Table) NewToken(kind string) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := hex.EncodeToString(b)
	t.mu.Lock()
	t.tokens[tok] = tokenEntry{Kind: kind}
	t.dirty = true
	t.mu.Unlock()
	return tok
}

// Bind ties a token to its node; an empty node drops the token (the
// launch failed).
func (t *Table) Bind(tok, node string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.tokens[tok]
	if !ok {
		return
	}
	if node == "" {
		delete(t.tokens, tok)
	} else {
		e.Node = node
		t.tokens[tok] = e
		if n := t.nodes[node]; n == nil {
			t.nodes[node] = &nodeUsage{Kind: e.Kind, Days: map[string]*Counts{}}
		}
	}
	t.dirty = true
}

// Adopt binds a token kept in a restored node's environment to it again.
func (t *Table) Adopt(tok, node, kind string) {
	if len(tok) < 32 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tokens[tok] = tokenEntry{Node: node, Kind: kind}
	if t.nodes[node] == nil {
		t.nodes[node] = &nodeUsage{Kind: kind, Days: map[string]*Counts{}}
	}
	t.dirty = true
}

// Forget drops a gone node's tokens (its usage stays, for the days).
func (t *Table) Forget(node string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, e := range t.tokens {
		if e.Node == node {
			delete(t.tokens, k)
		}
	}
	prefix := node + "\x00"
	for k := range t.last {
		if strings.HasPrefix(k, prefix) {
			delete(t.last, k)
		}
	}
	t.dirty = true
}

// identify maps a token to its node: 401 for none or an unknown one,
// 503 for one whose node is not bound yet.
func (t *Table) identify(tok string) (node, kind string, status int) {
	if tok == "" {
		return "", "", http.StatusUnauthorized
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, e := range t.tokens {
		if tokenEqual(k, tok) {
			if e.Node == "" {
				return "", "", http.StatusServiceUnavailable
			}
			return e.Node, e.Kind, http.StatusOK
		}
	}
	return "", "", http.StatusUnauthorized
}

// metricField says what a usage metric counts: its name and, for token
// metrics, the `type` attribute's values. One row per agent kind's
// names; a new kind adds its rows (docs/USAGE.md says what each sends).
type metricField struct {
	cost  bool
	types map[string]string // `type` value → input, output, cache_read, cache_creation
}

var usageMetrics = map[string]metricField{
	// Claude Code (measured, docs/USAGE.md)
	"claude_code.cost.usage":  {cost: true},
	"claude_code.token.usage": {types: map[string]string{"input": "input", "output": "output", "cacheRead": "cache_read", "cacheCreation": "cache_creation"}},
	// Gemini CLI (from its docs; tokens only, no cost)
	"gemini_cli.token.usage": {types: map[string]string{"input": "input", "output": "output", "thought": "output", "cache": "cache_read", "tool": "input"}},
}

func attrString(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// seriesKey names a cumulative series.
func seriesKey(node, metric string, dp *metricspb.NumberDataPoint) string {
	var parts []string
	for _, kv := range dp.GetAttributes() {
		parts = append(parts, kv.GetKey()+"="+kv.GetValue().String())
	}
	sort.Strings(parts)
	return node + "\x00" + metric + "\x00" + strings.Join(parts, ",") + "\x00" + strconv.FormatUint(dp.GetStartTimeUnixNano(), 10)
}

// addMetrics counts the usage metrics of an export from node.
func (t *Table) addMetrics(node, kind string, m *metricspb.MetricsData) {
	grew := false
	t.mu.Lock()
	n := t.nodeLocked(node, kind)
	n.Last = t.now().UTC()
	t.dirty = true
	for _, rm := range m.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, met := range sm.GetMetrics() {
				f, ok := usageMetrics[met.GetName()]
				sum := met.GetSum()
				if !ok || sum == nil {
					continue
				}
				cumulative := sum.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
				for _, dp := range sum.GetDataPoints() {
					v := dp.GetAsDouble()
					if _, isInt := dp.GetValue().(*metricspb.NumberDataPoint_AsInt); isInt {
						v = float64(dp.GetAsInt())
					}
					if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e15 {
						continue
					}
					if cumulative {
						k := seriesKey(node, met.GetName(), dp)
						prev, seen := t.last[k]
						t.last[k] = v
						if seen && v >= prev {
							v -= prev
						}
					}
					var c Counts
					switch {
					case f.cost:
						c.CostUSD, c.HasCost = v, true
					default:
						switch f.types[attrString(dp.GetAttributes(), "type")] {
						case "input":
							c.Input = int64(v)
						case "output":
							c.Output = int64(v)
						case "cache_read":
							c.CacheRead = int64(v)
						case "cache_creation":
							c.CacheCreation = int64(v)
						default:
							continue
						}
					}
					day := dayOf(dp.GetTimeUnixNano(), t.now())
					d := n.Days[day]
					if d == nil {
						d = &Counts{}
						n.Days[day] = d
					}
					d.add(c)
					n.Usage, grew = true, true
				}
			}
		}
	}
	t.mu.Unlock()
	if grew && t.OnAdd != nil {
		t.OnAdd(node)
	}
}

// addLogs notes that node exports (events carry the same usage as the
// metrics, which are what is counted).
func (t *Table) addLogs(node, kind string, l *logspb.LogsData) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.nodeLocked(node, kind)
	n.Last = t.now().UTC()
	for _, rl := range l.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			n.Logs += int64(len(sl.GetLogRecords()))
		}
	}
	t.dirty = true
}

func (t *Table) nodeLocked(node, kind string) *nodeUsage {
	n := t.nodes[node]
	if n == nil {
		n = &nodeUsage{Kind: kind, Days: map[string]*Counts{}}
		t.nodes[node] = n
	}
	return n
}

// dayOf is a data point's UTC day (its time, else now).
func dayOf(unixNano uint64, now time.Time) string {
	at := now
	if unixNano > 0 && unixNano < math.MaxInt64 {
		at = time.Unix(0, int64(unixNano))
		if at.After(now.Add(24*time.Hour)) || at.Before(now.Add(-400*24*time.Hour)) {
			at = now
		}
	}
	return at.UTC().Format(time.DateOnly)
}

// Summary is one node's usage: known is false where it sent no usage.
type Summary struct {
	Known bool
	Kind  string
	Life  Counts
	Today Counts
	Last  time.Time
}

// Node is a node's usage.
func (t *Table) Node(node string) Summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.nodes[node]
	if n == nil {
		return Summary{}
	}
	s := Summary{Known: n.Usage, Kind: n.Kind, Last: n.Last}
	today := t.now().UTC().Format(time.DateOnly)
	for day, c := range n.Days {
		s.Life.add(*c)
		if day == today {
			s.Today.add(*c)
		}
	}
	return s
}

// Row is one line of a usage report.
type Row struct {
	Key    string // the node, the kind or the day
	Counts Counts
	Known  bool
	Nodes  int
}

// Report sums usage since a day (inclusive, "" for all) by node, kind or
// day, sorted by key.
func (t *Table) Report(sinceDay, by string) []Row {
	t.mu.Lock()
	defer t.mu.Unlock()
	rows := map[string]*Row{}
	seen := map[string]map[string]bool{}
	for id, n := range t.nodes {
		for day, c := range n.Days {
			if sinceDay != "" && day < sinceDay {
				continue
			}
			key := id
			switch by {
			case "kind":
				key = n.Kind
			case "day":
				key = day
			}
			r := rows[key]
			if r == nil {
				r = &Row{Key: key}
				rows[key] = r
				seen[key] = map[string]bool{}
			}
			r.Counts.add(*c)
			r.Known = r.Known || n.Usage
			if !seen[key][id] {
				seen[key][id] = true
				r.Nodes++
			}
		}
		if by == "node" || by == "" {
			if _, ok := rows[id]; !ok && (sinceDay == "" || n.Last.UTC().Format(time.DateOnly) >= sinceDay) {
				rows[id] = &Row{Key: id, Nodes: 1}
			}
		}
	}
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Sum is the usage of the nodes keep selects, on day ("" for all days).
func (t *Table) Sum(day string, keep func(node, kind string) bool) Counts {
	t.mu.Lock()
	defer t.mu.Unlock()
	var c Counts
	for id, n := range t.nodes {
		if !keep(id, n.Kind) {
			continue
		}
		for d, x := range n.Days {
			if day == "" || d == day {
				c.add(*x)
			}
		}
	}
	return c
}

// Save writes the table if it changed (atomically, 0600).
func (t *Table) Save() error {
	t.mu.Lock()
	if !t.dirty {
		t.mu.Unlock()
		return nil
	}
	b, err := json.Marshal(onDisk{Tokens: t.tokens, Nodes: t.nodes, Last: t.last})
	t.dirty = false
	t.mu.Unlock()
	if err != nil {
		return err
	}
	tmp := t.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, t.path)
}

// Run saves the table every interval until ctx ends, and once then.
func (t *Table) Run(ctx context.Context, interval time.Duration, onErr func(error)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := t.Save(); err != nil && onErr != nil {
				onErr(err)
			}
			return
		case <-tick.C:
			if err := t.Save(); err != nil && onErr != nil {
				onErr(err)
			}
		}
	}
}
