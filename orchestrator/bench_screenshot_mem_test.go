package orchestrator

import (
	"context"
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

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkScreenshotMemory is issue 41's screenshot bar: ten concurrent
// screenshots of the largest kind (a 200x77 screen of 256-colour text at
// scale 4: 33.5 M pixels, an RGB surface) grow the orchestrator by at
// most 150 MB. peak-MB is the RSS high-water mark over the RSS before;
// after-MB the RSS 1 s after the last; refused the calls the screenshot
// memory budget turned away (unavailable, retryable).
//
//	go test ./orchestrator/ -run '^$' -bench 'ScreenshotMemory' -benchtime 1x
func BenchmarkScreenshotMemory(b *testing.B) {
	o, _ := newBenchOrchestrator(b, 0)
	dir := b.TempDir()
	script := filepath.Join(dir, "colours.sh")
	os.WriteFile(script, []byte(`i=0; while [ $i -lt 76 ]; do j=0; while [ $j -lt 25 ]; do printf '\033[38;5;%dm\033[48;5;%dmab%02d' $(( (i*25+j) % 256 )) $(( (i*7+j*3) % 256 )) $j; j=$((j+1)); done; printf '\033[0m\r\n'; i=$((i+1)); done; echo COLOURS-DONE; exec sleep 600`), 0o700)
	info, err := o.Launch(bctx(b, 20*time.Second), LaunchSpec{Command: []string{"sh", script}, Cwd: dir, Columns: 200, Rows: 77})
	if err != nil {
		b.Fatal(err)
	}
	testenv.Eventually(b, time.Minute, func() bool {
		snap, err := o.Snapshot(context.Background(), info.Terminal)
		return err == nil && strings.Contains(strings.Join(snap.Lines, "\n"), "COLOURS-DONE")
	}, testenv.Msg("the colours never printed"))
	for b.Loop() {
		runtime.GC()
		debug.FreeOSMemory()
		before := rssBytes(b)
		os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
		var wg sync.WaitGroup
		var refused, ok atomic.Int64
		for range 10 {
			wg.Go(func() {
				_, _, err := o.Screenshot(context.Background(), info.Terminal, 4, "")
				switch {
				case err == nil, tools.KindOf(err) == tools.KindRejected: // drawn, then over the PNG limit
					ok.Add(1)
				case tools.KindOf(err) == tools.KindUnavailable:
					refused.Add(1)
				default:
					b.Error(err)
				}
			})
		}
		wg.Wait()
		peak := hwmBytes()
		time.Sleep(time.Second)
		after := rssBytes(b)
		b.ReportMetric((float64(peak)-float64(before))/(1<<20), "peak-MB")
		b.ReportMetric((float64(after)-float64(before))/(1<<20), "after-MB")
		b.ReportMetric(float64(refused.Load()), "refused")
		b.ReportMetric(float64(ok.Load()), "drawn")
	}
}

// hwmBytes is the process's RSS high-water mark (VmHWM; reset by writing
// 5 to /proc/self/clear_refs).
func hwmBytes() int64 {
	data, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
