package orchestrator

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkFleetSearch measures fleet_search's engine (CONTRACT §30,
// docs/PERFORMANCE.md "Fleet search") over nodes that each hold 10,000
// lines of history (the servers' history-limit), a needle in one of them,
// beside a shell loop that runs `tmux capture-pane -p -J -S - -E -` per
// node (a tmux process per node) piped to grep. Both sides run in one
// benchmark on the same nodes. TERMSPRAWL_BENCH_SEARCH_NODES sets the
// node count (default 200).
//
//	go test -run XXX -bench FleetSearch -benchtime 5x ./orchestrator/
func BenchmarkFleetSearch(b *testing.B) {
	nodes := 200
	if v, err := strconv.Atoi(os.Getenv("TERMSPRAWL_BENCH_SEARCH_NODES")); err == nil && v > 0 {
		nodes = v
	}
	const lines = 10000
	o, _ := newBenchOrchestratorWith(b, benchIdleAfter, func(c *Config) { c.MaxNodes = nodes + 8 })
	dir := b.TempDir()
	ids := make([]string, nodes)
	var wg sync.WaitGroup
	var failed atomic.Value
	sem := make(chan struct{}, 8)
	for i := range nodes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			needle := ""
			if i == nodes/2 {
				needle = "echo the-needle-of-the-fleet; "
			}
			cmd := []string{"sh", "-c", fmt.Sprintf("%sseq -f 'history line %%g of node %d' 1 %d; echo filled; exec sleep 3600", needle, i, lines)}
			info, err := o.Launch(bctx(b, 60*time.Second), LaunchSpec{Command: cmd, Cwd: dir})
			if err != nil {
				failed.Store(err)
				return
			}
			ids[i] = info.Terminal
			if _, err := o.WaitFor(bctx(b, 120*time.Second), info.Terminal, tools.WaitSpec{Wait: tools.WaitText, Text: "filled", After: new(uint64), TimeoutMS: 40000}); err != nil {
				failed.Store(fmt.Errorf("node %s: %w", info.Terminal, err))
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	// The shell loop's list: each node's socket and session (nodes are
	// spread over shards of 8).
	var loop strings.Builder
	for _, id := range ids {
		n := o.node(id)
		fmt.Fprintf(&loop, "%s %s\n", n.Srv.Socket(), n.Session())
	}
	list := b.TempDir() + "/nodes"
	if err := os.WriteFile(list, []byte(loop.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	spec := SearchSpec{Pattern: "the-needle-of-the-fleet", Nodes: ids, Limit: tools.DefaultSearchLimit}

	b.Run("engine", func(b *testing.B) {
		var cmds atomic.Int64
		o.hooks.SearchCommand = func() { cmds.Add(1) }
		b.Cleanup(func() { o.hooks.SearchCommand = nil })
		runs := 0
		for b.Loop() {
			r, err := o.Search(bctx(b, 5*time.Minute), spec)
			if err != nil || len(r.Matches) != 1 || r.Nodes != nodes || len(r.Skipped) != 0 {
				b.Fatalf("search: %+v %v", r, err)
			}
			if r.Matches[0].Line > -lines*9/10 {
				b.Fatalf("the needle at line %d: the history is not %d lines", r.Matches[0].Line, lines)
			}
			runs++
		}
		b.ReportMetric(float64(cmds.Load())/float64(runs), "tmux-command-lines/op")
		b.ReportMetric(float64(nodes), "nodes")
	})
	b.Run("shell-loop", func(b *testing.B) {
		script := `found=0
while read -r sock sess; do
  if tmux -L "$sock" capture-pane -p -J -S - -E - -t "=$sess:" | grep -F the-needle-of-the-fleet >/dev/null; then found=$((found+1)); fi
done < "$1"
echo "$found"`
		for b.Loop() {
			out, err := exec.Command("sh", "-c", script, "sh", list).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "1" {
				b.Fatalf("the shell loop: %v %s", err, out)
			}
		}
		b.ReportMetric(float64(nodes), "tmux-processes/op")
	})
}
