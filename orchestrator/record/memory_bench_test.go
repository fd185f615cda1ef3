package record

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkTraceMemory: the memory an open trace really takes (issue 41,
// target 3: a 40 MB cast ≤ 200 MB of growth, four at once ≤ 500 MB).
// Each case opens casts of TERMSPRAWL_TRACE_MB (default 40) through a
// Registry and warms them as TraceOpen does (one at a time), and reports
// the process's RSS growth at its peak (VmHWM, reset before) and 1 s
// after, and the estimate (MemoryBytes) the budget counts.
func BenchmarkTraceMemory(b *testing.B) {
	mb := 40
	if v, err := strconv.Atoi(os.Getenv("TERMSPRAWL_TRACE_MB")); err == nil && v > 0 {
		mb = v
	}
	for _, tc := range []struct {
		kind   string
		open   int
		writer func(tb testing.TB, dir string) string
	}{
		{"scroll", 1, func(tb testing.TB, dir string) string {
			return writeBenchCast(tb, dir, "scroll", mb<<20, 10*time.Minute)
		}},
		{"tui", 1, func(tb testing.TB, dir string) string { return writeBenchCast(tb, dir, "tui", mb<<20, 10*time.Minute) }},
		{"tiny-events", 1, func(tb testing.TB, dir string) string { return writeTinyCast(tb, dir, mb<<20) }},
		{"scroll-recorded", 1, func(tb testing.TB, dir string) string {
			return writeBenchRecording(tb, dir, "scroll", mb<<20, 10*time.Minute)
		}},
		{"scroll-x4", 4, func(tb testing.TB, dir string) string {
			return writeBenchCast(tb, dir, "scroll", mb<<20, 10*time.Minute)
		}},
		{"tui-x4", 4, func(tb testing.TB, dir string) string { return writeBenchCast(tb, dir, "tui", mb<<20, 10*time.Minute) }},
	} {
		b.Run(tc.kind, func(b *testing.B) {
			var paths []string
			for i := range tc.open {
				d := filepath.Join(b.TempDir(), strconv.Itoa(i))
				os.Mkdir(d, 0o700)
				paths = append(paths, tc.writer(b, d))
			}
			for b.Loop() {
				runtime.GC()
				debug.FreeOSMemory()
				before := procStatusKB("VmRSS")
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
				reg := NewRegistry()
				var wg sync.WaitGroup
				var warm sync.Mutex
				var refused, evicted atomic.Int64
				for _, p := range paths {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, t, ev, err := reg.Open(p)
						evicted.Add(int64(len(ev)))
						if tools.KindOf(err) == tools.KindUnavailable {
							refused.Add(1)
							return
						}
						if err != nil {
							b.Error(err)
							return
						}
						warm.Lock()
						t.Warm()
						warm.Unlock()
						at := t.DurationMS() / 2
						if _, _, err := t.FrameAt(&at, ""); err != nil && tools.KindOf(err) != tools.KindNotFound {
							b.Error(err)
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(refused.Load()), "refused")
				b.ReportMetric(float64(evicted.Load()), "evicted")
				peak := procStatusKB("VmHWM")
				est := reg.MemoryBytes()
				runtime.GC()
				runtime.ReadMemStats(&m1)
				b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/(1<<20), "live-MB")
				time.Sleep(time.Second)
				after := procStatusKB("VmRSS")
				b.ReportMetric(float64(peak-before)/1024, "peak-MB")
				b.ReportMetric(float64(after-before)/1024, "after-MB")
				b.ReportMetric(float64(est)/(1<<20), "estimate-MB")
				b.ReportMetric(float64(len(reg.IDs())), "open")
				reg.CloseAll()
			}
		})
	}
}

// writeTinyCast writes a cast of about size bytes of one-character
// events (an echoed keystroke each), the most events a byte.
func writeTinyCast(tb testing.TB, dir string, size int) string {
	tb.Helper()
	p := filepath.Join(dir, "tiny.cast")
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintf(w, `{"version":2,"width":80,"height":24}`+"\n")
	n := 0
	for i := 0; n < size; i++ {
		s := fmt.Sprintf("[%d.%06d, \"o\", \"%c\"]\n", i/1000, (i%1000)*1000, 'a'+i%26)
		if i%80 == 79 {
			s = fmt.Sprintf("[%d.%06d, \"o\", \"\\r\\n\"]\n", i/1000, (i%1000)*1000)
		}
		w.WriteString(s)
		n += len(s)
	}
	w.Flush()
	f.Close()
	return p
}

// procStatusKB reads a field of /proc/self/status, in KiB.
func procStatusKB(field string) int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v
		}
	}
	return 0
}
