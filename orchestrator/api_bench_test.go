package orchestrator

import (
	"context"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkSessionInfoRoundTrip measures one in-process tools.Call of
// session_info against a live Serve: file reads, endpoint validation, HTTP
// on loopback, authentication and the handler. It reports the median and
// 99th percentile latency besides ns/op.
func BenchmarkSessionInfoRoundTrip(b *testing.B) {
	tmux, dir := apiNewState(b)
	s := apiStart(b, tmux, dir)
	apiLaunch(b, s.op(), "cat")
	ctx := context.Background()
	req := tools.Request{Operation: "session_info"}
	// Warm the connection pool.
	if res := tools.Call(ctx, s.op(), req, tools.CallOptions{}); !res.OK {
		b.Fatalf("session_info: %s", apiRes(res))
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res := tools.Call(ctx, s.op(), req, tools.CallOptions{})
		lat = append(lat, time.Since(t0))
		if !res.OK {
			b.Fatalf("session_info: %s", apiRes(res))
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		i := int(p * float64(len(lat)-1))
		return float64(lat[i].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// BenchmarkProcessCall compares one `termsprawlctl call session_info`
// process (what a shell script or an agent's tool hook pays) with one
// `tmux display-message` process against the same private server: the
// target is termsprawlctl ≤ 1.5 × tmux.
func BenchmarkProcessCall(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "termsprawlctl")
	build := exec.Command("go", "build", "-o", bin, "github.com/termsprawl/termsprawl/cmd/termsprawlctl")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build termsprawlctl: %v\n%s", err, out)
	}
	tmux, dir := apiNewState(b)
	s := apiStart(b, tmux, dir)
	apiLaunch(b, s.op(), "cat")
	var clean []string // no TMUX*, no TERMSPRAWL_*
	for _, kv := range tmuxtest.Env() {
		if !strings.HasPrefix(kv, "TERMSPRAWL_") {
			clean = append(clean, kv)
		}
	}
	run := func(b *testing.B, argv ...string) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = clean
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("%v: %v\n%s", argv, err, out)
		}
	}
	b.Run("termsprawlctl", func(b *testing.B) {
		argv := []string{bin, "--session", s.op(), "call", "session_info"}
		run(b, argv...)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			run(b, argv...)
		}
	})
	b.Run("tmux", func(b *testing.B) {
		argv := []string{"tmux", "-L", tmux.Socket, "display-message", "-p", "x"}
		run(b, argv...)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			run(b, argv...)
		}
	})
}
