package orchestrator

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkNeighbourDuringFlood measures what a flooding node costs a
// quiet neighbour on the same shard (issue 41: the shared mirror client
// carries both nodes' output in one stream): the neighbour, a `cat`, is
// sent a line and waited for until its echo is on the mirror, again
// and again while the other node prints a 40 MB file in a loop. Run as
// is (the shard's shared mirror client) and with
// TERMSPRAWL_BENCH_CLIENT_PER_NODE=1 (a client per node); quiet is the
// same without the flood.
//
//	go test ./orchestrator/ -run '^$' -bench NeighbourDuringFlood -benchtime 1x
func BenchmarkNeighbourDuringFlood(b *testing.B) {
	file := floodFile(b)
	for _, flood := range []bool{false, true} {
		name := "quiet"
		if flood {
			name = "flood"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				o, _ := newBenchOrchestrator(b, -1)
				dir := b.TempDir()
				if flood {
					if _, err := o.Launch(bctx(b, 20*time.Second), LaunchSpec{Command: []string{"sh", "-c", "while :; do cat " + file + "; done"}, Cwd: dir}); err != nil {
						b.Fatal(err)
					}
				}
				info, err := o.Launch(bctx(b, 20*time.Second), LaunchSpec{Command: []string{"cat"}, Cwd: dir})
				if err != nil {
					b.Fatal(err)
				}
				if o.node(info.Terminal).Srv != o.shards.List()[0] {
					b.Fatal("the two nodes are on different shards")
				}
				time.Sleep(time.Second) // the flood is under way
				var lat []time.Duration
				for k := range 40 {
					tok := fmt.Sprintf("tok%03dx", k)
					start := time.Now()
					_, err := o.Submit(bctx(b, 30*time.Second), info.Terminal, tok, &tools.WaitSpec{Wait: tools.WaitText, Text: tok, TimeoutMS: 30000})
					if err != nil {
						b.Fatalf("submit %s: %v", tok, err)
					}
					lat = append(lat, time.Since(start))
				}
				slices.Sort(lat)
				b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "echo-p50-ms")
				b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "echo-p99-ms")
				o.Close()
			}
		})
	}
}
