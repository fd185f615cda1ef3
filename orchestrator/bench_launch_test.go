package orchestrator

import (
	"context"
	"path/filepath"
	"slices"
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

// BenchmarkLaunch200 launches 200 nodes at once through the production
// path (shards of 8: 25 servers) and reports the time until the last
// launch answered, the slowest and the median launch, and how many
// callers would have given up after 30 s (issue 28: they once ran one at
// a time, ~0.28 s each, and 36 callers timed out). The closes after it
// are not timed; they also check that the empty shards are reclaimed.
//
//	go test ./orchestrator/ -run '^$' -bench 'Launch200' -benchtime 1x
func BenchmarkLaunch200(b *testing.B) {
	const k = 200
	srv := tmuxtest.New(b)
	dir := filepath.Join(b.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	o, err := New(ctx, Config{StateDir: dir, Socket: srv.Socket, MaxNodes: k})
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	cwd := b.TempDir()
	for b.Loop() {
		start := time.Now()
		var wg sync.WaitGroup
		ids := make([]string, k)
		errs := make([]error, k)
		took := make([]time.Duration, k)
		for i := range k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				info, err := o.Launch(ctx, LaunchSpec{Command: stayArgv(), Cwd: cwd})
				ids[i], errs[i], took[i] = info.Terminal, err, time.Since(start)
			}()
		}
		wg.Wait()
		all := time.Since(start)
		b.StopTimer()
		late := 0
		for i, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
			if took[i] > 30*time.Second {
				late++
			}
		}
		slices.Sort(took)
		b.ReportMetric(all.Seconds(), "s/200-launches")
		b.ReportMetric(float64(took[k/2].Milliseconds()), "ms-median")
		b.ReportMetric(float64(took[k-1].Milliseconds()), "ms-slowest")
		b.ReportMetric(float64(late), "over-30s")
		b.ReportMetric(float64(len(o.shards.List())), "shards")
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := o.CloseNode(ctx, id); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		if n := len(o.shards.List()); n != 1 {
			b.Fatalf("%d shards after closing every node, want 1", n)
		}
		b.StartTimer()
	}
}
