package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/probe"
	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkSemanticFlood: the 40 MB flood of BenchmarkFlood40MB on an
// awake node, without and with a program publishing its semantic tree as
// fast as it can through probe (which coalesces to 30 commits a second,
// each validated and committed by PublishSemantic), alternating in one
// run. It reports the flood's wall time as with / without, and the
// commits made and trees coalesced per flood.
func BenchmarkSemanticFlood(b *testing.B) {
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
	var commits, coalesced []float64
	one := func(i int, publish bool) time.Duration {
		goCh, doneCh := fmt.Sprintf("go-%d-%v", i, publish), fmt.Sprintf("done-%d-%v", i, publish)
		endTok := fmt.Sprintf("FLOOD-END-%d", i)
		info, err := o.Launch(bctx(b, 20*time.Second), LaunchSpec{
			Command: []string{"sh", "-c", floodScript(tmux, srv.Socket, file, goCh, doneCh, endTok)},
			Cwd:     b.TempDir(), Columns: 80, Rows: 24})
		if err != nil {
			b.Fatal(err)
		}
		id := info.Terminal
		rev0 := info.Revision
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var pub *probe.Publisher
		if publish {
			pub = probe.New(probe.Options{Send: func(ctx context.Context, tree json.RawMessage) error {
				_, err := o.PublishSemantic(id, tree)
				return err
			}})
			wg.Go(func() {
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					default:
					}
					root := &probe.Node{ID: "root", Role: probe.RoleWindow, Bounds: probe.Bounds{Width: 80, Height: 24}}
					for j := range 40 {
						root.Add(&probe.Node{ID: fmt.Sprintf("i%d", j), Role: probe.RoleListitem, Name: fmt.Sprintf("item %d of %d", j, k),
							Bounds: probe.Bounds{Row: j % 24, Width: 20, Height: 1}})
					}
					pub.Publish(root)
					time.Sleep(time.Millisecond) // a program redrawing 1,000 times a second
				}
			})
		}
		var fc floodCPU
		wall := timeFlood(b, srv.Socket, goCh, doneCh, &fc)
		close(stop)
		wg.Wait()
		if pub != nil {
			pub.Close()
			st := pub.Stats()
			commits = append(commits, float64(st.Published))
			coalesced = append(coalesced, float64(st.Coalesced))
			if st.Failed > 0 {
				b.Fatalf("%d commits refused", st.Failed)
			}
		}
		if r, err := o.WaitFor(bctx(b, 45*time.Second), id, tools.WaitSpec{Wait: tools.WaitText, Text: endTok, After: &rev0, TimeoutMS: 40000}); err != nil || !r.Matched {
			b.Logf("iteration %d: the wait for the last line: %+v %v", i, r, err)
		}
		if err := o.CloseNode(bctx(b, 20*time.Second), id); err != nil {
			b.Fatal(err)
		}
		return wall
	}
	var ratio []float64
	for i := range b.N {
		var w [2]time.Duration
		for k := range 2 {
			pub := (i+k)%2 == 1
			j := 0
			if pub {
				j = 1
			}
			w[j] = one(i, pub)
		}
		ratio = append(ratio, float64(w[1])/float64(w[0]))
		b.Logf("pair %d: flood %v with commits / %v without", i, w[1], w[0])
	}
	slices.Sort(ratio)
	b.ReportMetric(ratio[len(ratio)/2], "wall-ratio-p50")
	b.ReportMetric(commits[len(commits)/2], "commits/flood")
	b.ReportMetric(coalesced[len(coalesced)/2], "coalesced/flood")
}
