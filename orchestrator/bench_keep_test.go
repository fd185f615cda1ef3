package orchestrator

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkKeepScreensOverhead: the 40 MB flood of BenchmarkFlood40MB on
// an awake node of an orchestrator that keeps last screens (the default,
// every 2 s) and of one that does not (KeepScreens negative), alternating
// in one run so load from elsewhere falls on both alike. Each pair
// reports the flood's wall time and the orchestrator's CPU, as keeping /
// not keeping, and how many screens were written during it.
func BenchmarkKeepScreensOverhead(b *testing.B) {
	file := floodFile(b)
	fi, err := os.Stat(file)
	if err != nil {
		b.Fatal(err)
	}
	tmux := tmuxPath(b)
	keep, ksrv := newBenchOrchestratorWith(b, -1, nil)
	plain, psrv := newBenchOrchestratorWith(b, -1, func(c *Config) { c.KeepScreens = -1 })
	b.SetBytes(fi.Size())
	b.StopTimer()
	b.ResetTimer()
	one := func(i int, keeping bool) (wall, cpu time.Duration, writes int) {
		o, socket := plain, psrv.Socket
		if keeping {
			o, socket = keep, ksrv.Socket
		}
		goCh, doneCh := fmt.Sprintf("go-%d-%v", i, keeping), fmt.Sprintf("done-%d-%v", i, keeping)
		endTok := fmt.Sprintf("FLOOD-END-%d", i)
		info, err := o.Launch(bctx(b, 20*time.Second), LaunchSpec{
			Command: []string{"sh", "-c", floodScript(tmux, socket, file, goCh, doneCh, endTok)},
			Cwd:     b.TempDir(), Columns: 80, Rows: 24})
		if err != nil {
			b.Fatal(err)
		}
		rev0 := info.Revision
		var fc floodCPU
		before := screenWrites(o, info.Terminal)
		c0 := selfCPU()
		wall = timeFlood(b, socket, goCh, doneCh, &fc)
		if r, err := o.WaitFor(bctx(b, 45*time.Second), info.Terminal, tools.WaitSpec{Wait: tools.WaitText, Text: endTok, After: &rev0, TimeoutMS: 40000}); err != nil || !r.Matched {
			b.Logf("iteration %d: the wait for the last line: %+v %v", i, r, err)
		}
		cpu = selfCPU() - c0
		writes = screenWrites(o, info.Terminal) - before
		if err := o.CloseNode(bctx(b, 20*time.Second), info.Terminal); err != nil {
			b.Fatal(err)
		}
		return wall, cpu, writes
	}
	var wallRatio, cpuRatio []float64
	for i := range b.N {
		var w, c [2]time.Duration
		var n [2]int
		for k := range 2 {
			keeping := (i+k)%2 == 1 // alternate which goes first
			j := 0
			if keeping {
				j = 1
			}
			w[j], c[j], n[j] = one(i, keeping)
		}
		wallRatio = append(wallRatio, float64(w[1])/float64(w[0]))
		cpuRatio = append(cpuRatio, float64(c[1])/float64(c[0]))
		b.Logf("pair %d: wall %v / %v, orchestrator CPU %v / %v (keeping / not), %d screens kept", i, w[1], w[0], c[1], c[0], n[1])
	}
	slices.Sort(wallRatio)
	slices.Sort(cpuRatio)
	b.ReportMetric(wallRatio[len(wallRatio)/2], "wall-ratio-p50")
	b.ReportMetric(cpuRatio[len(cpuRatio)/2], "orch-cpu-ratio-p50")
}

// screenWrites is how many last screens o's keeper has written.
func screenWrites(o *Orchestrator, _ string) int { return int(o.screensKept.Load()) }
