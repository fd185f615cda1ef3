// Package usage receives agents' OpenTelemetry (CONTRACT §28): an
// OTLP/HTTP receiver (`/v1/metrics`, `/v1/logs`, protobuf and JSON) that
// knows each sender by the telemetry token termsprawl gave it at launch,
// and the table of tokens and cost per node, kind and day built from
// what they send. It knows nothing of nodes beyond the ids and kinds its
// caller registers.
package usage

import (
	"compress/gzip"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// MaxBody bounds one export request's body (after gzip, if any).
const MaxBody = 4 << 20

// Header is the header each agent's exporter sends its telemetry token
// in (OTEL_EXPORTER_OTLP_HEADERS=X-Termsprawl-Telemetry=TOKEN); an
// `Authorization: Bearer TOKEN` is accepted too (also as exporters send
// it unescaped: `Bearer%20TOKEN`).
const Header = "X-Termsprawl-Telemetry"

// tokenOf reads the telemetry token of a request.
func tokenOf(r *http.Request) string {
	if t := strings.TrimSpace(r.Header.Get(Header)); t != "" {
		return t
	}
	a := r.Header.Get("Authorization")
	for _, p := range []string{"Bearer ", "Bearer%20", "bearer "} {
		if t, ok := strings.CutPrefix(a, p); ok {
			return strings.TrimSpace(t)
		}
	}
	return ""
}

// ServeHTTP is the OTLP/HTTP receiver.
func (t *Table) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	signal := ""
	switch r.URL.Path {
	case "/v1/metrics":
		signal = "metrics"
	case "/v1/logs":
		signal = "logs"
	case "/v1/traces":
		signal = "traces" // accepted and dropped
	default:
		http.Error(w, "not an OTLP path: termsprawl receives /v1/metrics and /v1/logs", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "OTLP/HTTP exports are POSTs", http.StatusMethodNotAllowed)
		return
	}
	tok := tokenOf(r)
	node, kind, status := t.identify(tok)
	switch status {
	case http.StatusUnauthorized:
		http.Error(w, "no telemetry token, or one termsprawl did not give: each agent sends its own (X-Termsprawl-Telemetry)", http.StatusUnauthorized)
		return
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "the node is still starting: retry", http.StatusServiceUnavailable)
		return
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	isJSON := false
	switch ct {
	case "application/x-protobuf", "application/protobuf":
	case "application/json":
		isJSON = true
	default:
		http.Error(w, "Content-Type must be application/x-protobuf or application/json", http.StatusUnsupportedMediaType)
		return
	}
	if r.ContentLength > MaxBody {
		http.Error(w, fmt.Sprintf("body over %d MiB", MaxBody>>20), http.StatusRequestEntityTooLarge)
		return
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, MaxBody)
	switch strings.ToLower(r.Header.Get("Content-Encoding")) {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, "bad gzip body", http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	default:
		http.Error(w, "Content-Encoding must be gzip or none", http.StatusUnsupportedMediaType)
		return
	}
	b, err := io.ReadAll(io.LimitReader(body, MaxBody+1))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) || len(b) > MaxBody {
		http.Error(w, fmt.Sprintf("body over %d MiB", MaxBody>>20), http.StatusRequestEntityTooLarge)
		return
	}
	if err != nil {
		http.Error(w, "read the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	switch signal {
	case "metrics":
		var m metricspb.MetricsData
		if err := decode(b, isJSON, &m); err != nil {
			http.Error(w, "not an OTLP metrics export: "+err.Error(), http.StatusBadRequest)
			return
		}
		t.addMetrics(node, kind, &m)
	case "logs":
		var l logspb.LogsData
		if err := decode(b, isJSON, &l); err != nil {
			http.Error(w, "not an OTLP logs export: "+err.Error(), http.StatusBadRequest)
			return
		}
		t.addLogs(node, kind, &l)
	}
	// An empty Export*ServiceResponse: no bytes in protobuf, {} in JSON.
	if isJSON {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// decode reads an export request. The collector's Export*ServiceRequest
// is field 1, repeated Resource*: the same wire form (and JSON name) as
// MetricsData and LogsData, which come without gRPC.
func decode(b []byte, isJSON bool, m proto.Message) error {
	if isJSON {
		return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, m)
	}
	return proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, m)
}

// tokenEqual compares tokens in constant time.
func tokenEqual(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
