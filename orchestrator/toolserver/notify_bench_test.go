package toolserver

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkSessionInfoWebhook: session_info and agent_report (whose state
// changes notify) side by side with no webhook, a webhook answering 500
// (retried with backoff) and one that hangs (each attempt held until its
// 5 s timeout), while 4 agents keep changing state in the background so
// the notifier always has work. The figures are in docs/PERFORMANCE.md.
func BenchmarkSessionInfoWebhook(b *testing.B) {
	for _, c := range []struct {
		name   string
		status int
		hang   bool
	}{{"none", 0, false}, {"webhook-500", 500, false}, {"webhook-hang", 200, true}} {
		b.Run(c.name, func(b *testing.B) {
			tmux, dir := apiNewState(b)
			cfg := orchestrator.Config{}
			if c.status != 0 {
				recv, srv := newHookRecv(b, c.status)
				if c.hang {
					recv.hang = make(chan struct{})
					b.Cleanup(func() { close(recv.hang) })
				}
				cfg.Notify = []string{"webhook=" + srv.URL}
			}
			s := apiStartWith(b, tmux, dir, cfg)
			var agents []string
			for range 4 {
				r, _ := apiMutate(b, s.op(), "agent_launch", apiM{"agent": "custom", "command": []string{"cat"}})
				var info tools.NodeInfo
				_ = json.Unmarshal(r.Result, &info)
				agents = append(agents, s.session(info.Terminal))
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for _, ag := range agents {
				wg.Add(1)
				go func() { // state changes that notify (waiting, error), forever
					defer wg.Done()
					for i := 0; ctx.Err() == nil; i++ {
						ev := []string{"Notification", "UserPromptSubmit", "StopFailure", "UserPromptSubmit"}[i%4]
						args, _ := json.Marshal(apiM{"event": ev})
						tools.Call(ctx, ag, tools.Request{Operation: "agent_report", Args: args}, tools.CallOptions{})
						time.Sleep(5 * time.Millisecond)
					}
				}()
			}
			defer func() { cancel(); wg.Wait() }()
			req := tools.Request{Operation: "session_info"}
			rep, _ := json.Marshal(apiM{"event": "Notification"})
			lat := make([]time.Duration, 0, b.N)
			repLat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if res := tools.Call(ctx, s.op(), req, tools.CallOptions{}); !res.OK {
					b.Fatalf("session_info: %s", res.Error)
				}
				lat = append(lat, time.Since(t0))
				t0 = time.Now()
				tools.Call(ctx, agents[0], tools.Request{Operation: "agent_report", Args: rep}, tools.CallOptions{})
				repLat = append(repLat, time.Since(t0))
			}
			b.StopTimer()
			pct := func(l []time.Duration, p float64) float64 {
				sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
				return float64(l[int(p*float64(len(l)-1))].Nanoseconds()) / 1e3
			}
			b.ReportMetric(pct(lat, 0.50), "info-p50-µs")
			b.ReportMetric(pct(lat, 0.99), "info-p99-µs")
			b.ReportMetric(pct(repLat, 0.50), "report-p50-µs")
			b.ReportMetric(pct(repLat, 0.99), "report-p99-µs")
		})
	}
}
