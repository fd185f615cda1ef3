package toolserver

import (
	"context"
	"fmt"
	"math"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/browsertest"
	"github.com/termsprawl/termsprawl/orchestrator"
)

// selfCPU is this process's user+system CPU time: in these benchmarks
// the orchestrator runs in-process (Serve), while tmux, the nodes, the
// browser and its driver are other processes.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkMonitorPages: 16 nodes print a line every 200 ms; the
// orchestrator's CPU with two monitor pages open (each showing one of the
// nodes) against none, in interleaved rounds of one run, and the latency
// from a line's printing (bash's $EPOCHREALTIME) to its row in the page
// (a MutationObserver in Chromium). Run with -benchtime 1x.
func BenchmarkMonitorPages(b *testing.B) {
	const nodes, rounds, phase = 16, 4, 6 * time.Second
	br := browsertest.Start(b)
	tmux, dir := apiNewState(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan ServeInfo, 1)
	go func() {
		// Nothing sleeps: every node costs the same in both phases.
		done <- Serve(ctx, orchestrator.Config{StateDir: dir, Socket: tmux.Socket, Version: "bench", IdleAfter: -1, LaunchWatch: -1}, func(i ServeInfo) { ready <- i })
	}()
	var info ServeInfo
	select {
	case info = <-ready:
	case err := <-done:
		b.Fatal(err)
	}
	defer func() { cancel(); <-done }()
	op := info.OperatorSession
	url := monitorURL(b, op)
	ids := make([]string, nodes)
	for i := range ids {
		ids[i] = apiLaunch(b, op, "bash", "--norc", "--noprofile", "-c",
			`i=0; while :; do echo "M ${EPOCHREALTIME/./} line $i of a node printing"; i=$((i+1)); sleep 0.2; done`)
	}
	br.Do("open", apiM{"url": "about:blank"})
	br.Do("open", apiM{"url": "about:blank"})
	var none, pages []float64 // CPU ms per second of wall time
	var lat []float64         // ms
	measure := func() float64 {
		c0, t0 := selfCPU(), time.Now()
		time.Sleep(phase)
		return float64(selfCPU()-c0) / float64(time.Since(t0)) * 1000
	}
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		time.Sleep(time.Second) // settle after the last phase's pages left
		none = append(none, measure())
		for p := 0; p < 2; p++ {
			br.Do("goto", apiM{"page": p, "url": url + "#node=" + ids[p]})
			br.Do("waitShown", apiM{"page": p, "node": ids[p]})
			br.Do("latencies", apiM{"page": p, "marker": "M"})
		}
		time.Sleep(time.Second)
		pages = append(pages, measure())
		for p := 0; p < 2; p++ {
			for _, v := range br.Do("collect", apiM{"page": p})["lat"].([]any) {
				lat = append(lat, v.(float64))
			}
			br.Do("goto", apiM{"page": p, "url": "about:blank"})
		}
	}
	b.StopTimer()
	med := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	pct := func(xs []float64, q float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[int(math.Ceil(float64(len(s))*q))-1]
	}
	b.ReportMetric(med(none), "cpu-ms/s-none")
	b.ReportMetric(med(pages), "cpu-ms/s-2pages")
	b.ReportMetric(med(pages)/med(none), "cpu-ratio")
	if len(lat) > 0 {
		b.ReportMetric(pct(lat, 0.50), "p50-ms")
		b.ReportMetric(pct(lat, 0.99), "p99-ms")
		b.ReportMetric(float64(len(lat)), "lines")
	}
	b.Logf("CPU ms/s without pages %v, with two pages %v; %d latencies", fmtAll(none), fmtAll(pages), len(lat))
}

func fmtAll(xs []float64) string {
	s := ""
	for _, x := range xs {
		s += fmt.Sprintf(" %.1f", x)
	}
	return s
}
