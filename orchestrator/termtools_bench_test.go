package orchestrator

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/tools"
)

// benchNode launches argv at cols x rows and waits for text.
func benchNode(b *testing.B, o *Orchestrator, cols, rows int, text string, argv ...string) string {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := o.Launch(ctx, LaunchSpec{Command: argv, Cwd: b.TempDir(), Columns: cols, Rows: rows})
	if err != nil {
		b.Fatal(err)
	}
	zero := node.RevisionBase(o.node(info.Terminal).Meta.Epoch)
	if _, err := o.WaitFor(ctx, info.Terminal, tools.WaitSpec{Wait: tools.WaitText, Text: text, After: &zero, TimeoutMS: 20000}); err != nil {
		b.Fatal(err)
	}
	return info.Terminal
}

// terminal_query on a full 200x50 screen, beside terminal_snapshot of the
// same screen (the cheapest read) as the baseline: query = snapshot + the
// search, so the ratio shows what searching costs.
func BenchmarkQuery200x50(b *testing.B) {
	o, _ := newBenchOrchestrator(b, 0)
	// 50 rows of 200 columns of words, "needle" once per row, the last
	// row ends the screen.
	script := `for i in $(seq 1 49); do printf 'row %03d ' $i; j=0; while [ $j -lt 23 ]; do printf 'word%02d ' $j; j=$((j+1)); done; printf 'needle\n'; done; printf 'END'; sleep 600`
	id := benchNode(b, o, 200, 50, "END", "sh", "-c", script)
	if q, _ := o.Query(context.Background(), id, QuerySpec{Text: "needle"}); len(q.Matches) != 49 {
		b.Fatalf("%d matches, want 49", len(q.Matches))
	}
	b.Run("snapshot", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := o.Snapshot(context.Background(), id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("query_text", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := o.Query(context.Background(), id, QuerySpec{Text: "needle"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("query_regex", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := o.Query(context.Background(), id, QuerySpec{Pattern: `word1\d needle`}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A click round trip: the report sent to mousecat and its echo on the
// mirror (terminal_click with a wait), beside the same round trip for one
// raw byte (terminal_write_raw with a wait) as the baseline.
func BenchmarkClickRoundTrip(b *testing.B) {
	o, _ := newBenchOrchestrator(b, 0)
	id := benchNode(b, o, 80, 24, "READY", mousecat(b, "1000", "1006")...)
	ctx := context.Background()
	b.Run("write_raw", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			r, err := o.WriteRaw(ctx, id, []byte("x"), &tools.WaitSpec{Wait: tools.WaitText, Text: "IN 78", TimeoutMS: 20000})
			if err != nil || !r.Wait.Matched {
				b.Fatal(r, err)
			}
		}
	})
	b.Run("click", func(b *testing.B) {
		at := &tools.Cell{Row: 3, Column: 7}
		want := "IN " + hexOf("\x1b[<0;8;4M\x1b[<0;8;4m")
		defer reportCPU(b)()
		for b.Loop() {
			r, err := o.Mouse(ctx, id, MouseSpec{Kind: "click", At: at}, &tools.WaitSpec{Wait: tools.WaitText, Text: want, TimeoutMS: 20000})
			if err != nil || !r.Wait.Matched {
				b.Fatal(r, err)
			}
		}
	})
	b.Run("write_raw_same_bytes", func(b *testing.B) {
		data := []byte("\x1b[<0;8;4M\x1b[<0;8;4m")
		want := "IN " + hexOf(string(data))
		defer reportCPU(b)()
		for b.Loop() {
			r, err := o.WriteRaw(ctx, id, data, &tools.WaitSpec{Wait: tools.WaitText, Text: want, TimeoutMS: 20000})
			if err != nil || !r.Wait.Matched {
				b.Fatal(r, err)
			}
		}
	})
}

// reportCPU reports the process's CPU time per op (orchestrator goroutines
// included) beside the wall time: the machine is shared, and CPU time
// moves less with the load of others. Call as defer reportCPU(b)().
func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64((processCPU()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
