package toolserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkOperatorUnderLoad is issue 41's fourth target: while one agent
// keeps 64 heavy calls in flight (terminal_snapshot with a screenshot of
// a 200x50 many-coloured screen at scale 1, through /call as its CLI
// would), the operator calls terminal_list every 100 ms for 10 s
// (TERMSPRAWL_LOAD_SECONDS); every operator call must answer within 1 s.
// "lanes" is the server as it runs (heavy calls in per-agent lanes, the
// operator's lane reserved); "no-lanes" the same load with the lanes
// off, the baseline. op-p50-ms, op-p99-ms and op-max-ms are the
// operator's latencies; agent-calls the agent's calls answered.
//
//	go test ./orchestrator/toolserver/ -run '^$' -bench OperatorUnderLoad -benchtime 1x
func BenchmarkOperatorUnderLoad(b *testing.B) {
	secs := 10 * time.Second
	if v, err := time.ParseDuration(os.Getenv("TERMSPRAWL_LOAD_SECONDS") + "s"); err == nil && v > 0 {
		secs = v
	}
	tmux, dir := apiNewState(b)
	s := apiStart(b, tmux, dir)
	op := s.op()
	script := filepath.Join(b.TempDir(), "colours.sh")
	os.WriteFile(script, []byte(`i=0; while [ $i -lt 49 ]; do j=0; while [ $j -lt 40 ]; do printf '\033[38;5;%dm\033[48;5;%dmab%02d' $(( (i*40+j) % 256 )) $(( (i+j) % 8 )) $j; j=$((j+1)); done; printf '\033[0m\r\n'; i=$((i+1)); done; echo COLOURS-DONE; exec sleep 3600`), 0o700)
	r, _ := apiMutate(b, op, "terminal_launch", apiM{"command": []string{"sh", script}, "columns": 200, "rows": 50, "cwd": b.TempDir()})
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil || info.Terminal == "" {
		b.Fatalf("launch result %s: %v", r.Result, err)
	}
	term := info.Terminal
	apiWaitScreen(b, op, term, "COLOURS-DONE")
	agent := s.session(term)
	if r := tools.Call(context.Background(), agent, tools.Request{Operation: "terminal_snapshot",
		Args: apiArgs(b, apiM{"terminal": term, "screenshot": true, "screenshot_scale": 1})}, tools.CallOptions{}); !r.OK {
		b.Fatalf("the agent's screenshot: %s", r.Error)
	}
	for _, mode := range []string{"lanes", "no-lanes"} {
		b.Run(mode, func(b *testing.B) {
			noLanes = mode == "no-lanes"
			defer func() { noLanes = false }()
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), secs)
				var wg sync.WaitGroup
				var calls atomic.Int64
				for range tools.MaxCallsPerToken {
					wg.Go(func() {
						for ctx.Err() == nil {
							r := tools.Call(ctx, agent, tools.Request{Operation: "terminal_snapshot",
								Args: apiArgs(b, apiM{"terminal": term, "screenshot": true, "screenshot_scale": 1})}, tools.CallOptions{})
							if r.OK {
								calls.Add(1)
							}
						}
					})
				}
				var lat []time.Duration
				for tick := time.NewTicker(100 * time.Millisecond); ctx.Err() == nil; <-tick.C {
					t0 := time.Now()
					r := apiCall(b, op, "terminal_list", nil)
					lat = append(lat, time.Since(t0))
					if !r.OK {
						b.Errorf("terminal_list: %s", r.Error)
					}
				}
				cancel()
				wg.Wait()
				slices.Sort(lat)
				b.ReportMetric(ms(lat[len(lat)/2]), "op-p50-ms")
				b.ReportMetric(ms(lat[len(lat)*99/100]), "op-p99-ms")
				b.ReportMetric(ms(lat[len(lat)-1]), "op-max-ms")
				b.ReportMetric(float64(calls.Load()), "agent-calls")
			}
		})
	}
}
