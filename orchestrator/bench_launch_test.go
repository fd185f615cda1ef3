package orchestrator

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkLaunchParallel measures launches through the production path
// (the default LaunchWatch) of a program that prints and stays: one
// launch alone, then eight at once. "eight" reports ratio, its time over
// one's: CONTRACT §24 wants at most 2 (docs/PERFORMANCE.md).
//
//	go test ./orchestrator/ -run '^$' -bench 'LaunchParallel' -benchtime 5x
func BenchmarkLaunchParallel(b *testing.B) {
	srv := tmuxtest.New(b)
	dir := filepath.Join(b.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	o, err := New(ctx, Config{StateDir: dir, Socket: srv.Socket})
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	cwd := b.TempDir()
	// round launches k at once and returns how long the launches took
	// (the closes after them are not timed).
	round := func(b *testing.B, k int) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		ids := make([]string, k)
		errs := make([]error, k)
		for i := range k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				info, err := o.Launch(ctx, LaunchSpec{Command: stayArgv(), Cwd: cwd})
				ids[i], errs[i] = info.Terminal, err
			}()
		}
		wg.Wait()
		took := time.Since(start)
		b.StopTimer()
		for i, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
			if err := o.CloseNode(ctx, ids[i]); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		return took
	}
	var one time.Duration
	b.Run("one", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			total += round(b, 1)
		}
		one = total / time.Duration(b.N)
		b.ReportMetric(float64(one.Milliseconds()), "ms/launch")
	})
	b.Run("eight", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			total += round(b, 8)
		}
		each := total / time.Duration(b.N)
		b.ReportMetric(float64(each.Milliseconds()), "ms/8-launches")
		if one > 0 {
			b.ReportMetric(float64(each)/float64(one), "ratio")
		}
	})
}
