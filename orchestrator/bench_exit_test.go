package orchestrator

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkFloodLastLine repeats the end of BenchmarkFlood40MB on a
// smaller flood (TERMSPRAWL_FLOOD_MB, default 4 MiB): a program floods
// its pane, prints a last line and exits, and a text wait for that line,
// started once the program signalled it is done, must match. It counts
// the waits that failed ("exited before the text wait was satisfied")
// and the exits the process watcher reported before tmux confirmed them
// (exitcheck.go). Run it many times: -benchtime 200x.
func BenchmarkFloodLastLine(b *testing.B) {
	mb, _ := strconv.Atoi(os.Getenv("TERMSPRAWL_FLOOD_MB"))
	if mb <= 0 {
		mb = 4
	}
	file := floodFileOf(b, mb<<20)
	tmux := tmuxPath(b)
	var unconfirmed atomic.Int64
	o, srv := newBenchOrchestratorWith(b, 0, func(c *Config) {
		c.hooks = &hooks{Hooks: node.Hooks{ExitUnconfirmed: func(*node.Node, bool) { unconfirmed.Add(1) }}}
	})
	failed := 0
	for i := range b.N {
		goCh, doneCh := fmt.Sprintf("go-%d", i), fmt.Sprintf("done-%d", i)
		endTok := fmt.Sprintf("FLOOD-END-%d", i)
		info, err := o.Launch(bctx(b, 20*time.Second), LaunchSpec{
			Command: []string{"sh", "-c", floodScript(tmux, srv.Socket, file, goCh, doneCh, endTok)},
			Cwd:     b.TempDir(), Columns: 80, Rows: 24})
		if err != nil {
			b.Fatal(err)
		}
		id := info.Terminal
		snap, err := o.Snapshot(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		rev0 := snap.Revision
		mustTmux(b, srv.Socket, "", "wait-for", "-S", goCh)
		mustTmux(b, srv.Socket, "", "wait-for", doneCh)
		r, err := o.WaitFor(bctx(b, 45*time.Second), id, tools.WaitSpec{Wait: tools.WaitText, Text: endTok, After: &rev0, TimeoutMS: 40000})
		if err != nil || !r.Matched {
			failed++
			b.Logf("iteration %d at %s: the wait for the last line failed: %+v %v", i, time.Now().UTC().Format("15:04:05.000"), r, err)
		}
		if err := o.CloseNode(bctx(b, 20*time.Second), id); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(failed), "failed-waits")
	b.ReportMetric(float64(unconfirmed.Load()), "unconfirmed-exits")
}
