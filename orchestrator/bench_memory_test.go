package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// BenchmarkFloodMemory is issue 27's third target: the orchestrator's
// RSS 10 s after ten nodes each printed TERMSPRAWL_FLOOD_NODE_MB (default
// 20) MB of base64 at once, over its RSS with the same ten nodes before
// the flood (ratio, target ≤ 1.5). The nodes stay awake (a snapshot
// polls each for the end of its flood). heap-live-MiB and
// heap-unreturned-MiB split the heap after: live objects, and free pages
// the runtime has not yet returned to the system.
//
//	go test ./orchestrator/ -run '^$' -bench 'FloodMemory' -benchtime 1x -count 3
func BenchmarkFloodMemory(b *testing.B) {
	mb := 20
	if v := os.Getenv("TERMSPRAWL_FLOOD_NODE_MB"); v != "" {
		var err error
		if mb, err = strconv.Atoi(v); err != nil || mb < 1 {
			b.Fatalf("TERMSPRAWL_FLOOD_NODE_MB=%q: want a positive number", v)
		}
	}
	const nodes = 10
	for b.Loop() {
		o, _ := newBenchOrchestrator(b, 0)
		dir := b.TempDir()
		goFile := filepath.Join(dir, "go")
		// base64 of 3/4 of the size prints the size.
		script := fmt.Sprintf(`while [ ! -e %q ]; do sleep 0.05; done; head -c %d /dev/urandom | base64; echo FLOOD-DONE; exec sleep 600`, goFile, mb*750_000)
		ids := make([]string, nodes)
		for i := range nodes {
			info, err := o.Launch(bctx(b, 20*time.Second), LaunchSpec{Command: []string{"sh", "-c", script}, Cwd: dir, Columns: 80, Rows: 24})
			if err != nil {
				b.Fatal(err)
			}
			ids[i] = info.Terminal
		}
		time.Sleep(3 * time.Second)
		runtime.GC()
		before := rssBytes(b)
		if err := os.WriteFile(goFile, nil, 0o600); err != nil {
			b.Fatal(err)
		}
		for _, id := range ids {
			if !testenv.Until(5*time.Minute, func() bool {
				snap, err := o.Snapshot(context.Background(), id)
				if err != nil {
					b.Fatal(err)
				}
				return strings.Contains(strings.Join(snap.Lines, "\n"), "FLOOD-DONE")
			}) {
				b.Fatalf("node %s: no FLOOD-DONE after 5 minutes", id)
			}
		}
		peak := rssBytes(b)
		for range 10 {
			time.Sleep(time.Second)
			if os.Getenv("TERMSPRAWL_FLOOD_TRACE") != "" {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.Logf("rss %.1f MiB heap %.1f idle-unreleased %.1f freed-at %d seen %d", float64(rssBytes(b))/(1<<20), float64(ms.HeapAlloc)/(1<<20), float64(ms.HeapIdle-ms.HeapReleased)/(1<<20), o.output.FreedAt(), o.output.Seen())
			}
		}
		after := rssBytes(b)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if path := os.Getenv("TERMSPRAWL_FLOOD_HEAP_PROFILE"); path != "" {
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			if err := pprof.WriteHeapProfile(f); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		mib := func(v uint64) float64 { return float64(v) / (1 << 20) }
		b.ReportMetric(mib(before), "before-MiB")
		b.ReportMetric(mib(peak), "done-MiB")
		b.ReportMetric(mib(after), "after-MiB")
		b.ReportMetric(float64(after)/float64(before), "ratio")
		b.ReportMetric(mib(ms.HeapAlloc), "heap-live-MiB")
		b.ReportMetric(mib(ms.HeapIdle-ms.HeapReleased), "heap-unreturned-MiB")
		b.StopTimer()
		o.Close()
		b.StartTimer()
	}
}

// rssBytes is this process's resident set (VmRSS).
func rssBytes(b *testing.B) uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
