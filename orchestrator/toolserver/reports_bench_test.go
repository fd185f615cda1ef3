package toolserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkReports200 is 200 agents (TERMSPRAWL_SCALE_NODES) reporting at
// once: every node of one orchestrator sends agent_report {event: Stop},
// in-process over HTTP with its own session, all together, b.N rounds.
// Before the rounds each node reports 32 times, so agents.json holds every
// agent with its 32 evidence entries (the size of the file a report makes
// the persister write). It reports each report's p50 and p99 (…-ms), the
// reports per second over the rounds (reports/s) and the file's size
// (agents-kB).
func BenchmarkReports200(b *testing.B) {
	n := scaleNodes(b)
	tmux, dir := apiNewState(b)
	s := apiStartWith(b, tmux, dir, orchestrator.Config{MaxNodes: n + 8})
	cwd := b.TempDir()
	sessions := make([]string, n)
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range work {
				res := apiCall(b, s.op(), "terminal_launch", apiM{"command": []string{"sleep", "3600"}, "columns": 80, "rows": 24, "cwd": cwd})
				var r apiReceipt
				var info tools.NodeInfo
				if !res.OK || json.Unmarshal(res.Value, &r) != nil || json.Unmarshal(r.Result, &info) != nil {
					b.Errorf("launch %d: %s %s", i, res.Error, res.Value)
					continue
				}
				sessions[i] = s.session(info.Terminal)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	// round is every node reporting once, all at once; it returns each
	// report's latency.
	round := func() []time.Duration {
		lat := make([]time.Duration, n)
		var wg sync.WaitGroup
		for i, sess := range sessions {
			wg.Go(func() {
				start := time.Now()
				res := apiCall(b, sess, "agent_report", apiM{"event": "Stop"})
				lat[i] = time.Since(start)
				if !res.OK {
					b.Errorf("agent_report: %s", res.Error)
				}
			})
		}
		wg.Wait()
		return lat
	}
	for range maxEvidence {
		round()
	}
	var all []time.Duration
	start := time.Now()
	for b.Loop() {
		all = append(all, round()...)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(all)
	b.ReportMetric(ms(all[len(all)/2]), "p50-ms")
	b.ReportMetric(ms(all[len(all)*99/100]), "p99-ms")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "reports/s")
	if st, err := os.Stat(filepath.Join(dir, "toolserver", "agents.json")); err == nil {
		b.ReportMetric(float64(st.Size())/1024, "agents-kB")
	}
}
