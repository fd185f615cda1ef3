package orchestrator

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkRecordingOverhead: the 40 MB flood of BenchmarkFlood40MB on an
// awake node, not recorded and recorded, alternating in one run (so load
// from elsewhere falls on both alike). Each pair reports the flood's wall
// time and the orchestrator's CPU from the flood's start until the node
// is closed (the recording flushed), as recorded / not recorded.
func BenchmarkRecordingOverhead(b *testing.B) {
	file := floodFile(b)
	fi, err := os.Stat(file)
	if err != nil {
		b.Fatal(err)
	}
	tmux := tmuxPath(b)
	o, srv := newBenchOrchestrator(b, -1)
	b.SetBytes(fi.Size())
	b.StopTimer()
	b.ResetTimer()
	one := func(i int, record bool) (wall, cpu time.Duration) {
		goCh, doneCh := fmt.Sprintf("go-%d-%v", i, record), fmt.Sprintf("done-%d-%v", i, record)
		endTok := fmt.Sprintf("FLOOD-END-%d", i)
		info, err := o.Launch(bctx(b, 20*time.Second), LaunchSpec{
			Command: []string{"sh", "-c", floodScript(tmux, srv.Socket, file, goCh, doneCh, endTok)},
			Cwd:     b.TempDir(), Columns: 80, Rows: 24, Record: record})
		if err != nil {
			b.Fatal(err)
		}
		rev0 := info.Revision
		var fc floodCPU
		c0 := selfCPU()
		wall = timeFlood(b, srv.Socket, goCh, doneCh, &fc)
		if r, err := o.WaitFor(bctx(b, 45*time.Second), info.Terminal, tools.WaitSpec{Wait: tools.WaitText, Text: endTok, After: &rev0, TimeoutMS: 40000}); err != nil || !r.Matched {
			b.Logf("iteration %d: the wait for the last line: %+v %v", i, r, err)
		}
		if err := o.CloseNode(bctx(b, 20*time.Second), info.Terminal); err != nil {
			b.Fatal(err)
		}
		return wall, selfCPU() - c0
	}
	var wallRatio, cpuRatio []float64
	for i := range b.N {
		var w [2]time.Duration
		var c [2]time.Duration
		for k := range 2 {
			rec := (i+k)%2 == 1 // alternate which goes first
			j := 0
			if rec {
				j = 1
			}
			w[j], c[j] = one(i, rec)
		}
		wallRatio = append(wallRatio, float64(w[1])/float64(w[0]))
		cpuRatio = append(cpuRatio, float64(c[1])/float64(c[0]))
		b.Logf("pair %d: wall %v / %v, orchestrator CPU %v / %v (recorded / not)", i, w[1], w[0], c[1], c[0])
	}
	slices.Sort(wallRatio)
	slices.Sort(cpuRatio)
	b.ReportMetric(wallRatio[len(wallRatio)/2], "wall-ratio-p50")
	b.ReportMetric(cpuRatio[len(cpuRatio)/2], "orch-cpu-ratio-p50")
}
