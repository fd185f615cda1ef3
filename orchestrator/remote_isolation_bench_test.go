package orchestrator

// A slow or unreachable host never delays launches on this machine
// (CONTRACT §23): local launch+close with the host connected, hung (every
// process of the host stopped, so its connection and every attempt hang,
// and a remote launch always under way) and unreachable (the link cut,
// and a remote launch always trying).
// "ratio" is the op's time over the connected case's (docs/PERFORMANCE.md).
//
//	go test ./orchestrator/ -run '^$' -bench 'LocalLaunchHost' -benchtime 20x

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

func BenchmarkLocalLaunchHost(b *testing.B) {
	o, f := benchRemote(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cwd := b.TempDir()
	var base float64
	// background keeps a remote launch (and its close) going until stop.
	background := func() (stop func()) {
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
				if info, err := o.Launch(lctx, LaunchSpec{Command: []string{"cat"}, Host: "big"}); err == nil {
					o.CloseNode(lctx, info.Terminal)
				} else {
					time.Sleep(500 * time.Millisecond) // a caller retrying, not a CPU burner
				}
				lcancel()
			}
		}()
		return func() { close(done); wg.Wait() }
	}
	run := func(b *testing.B) {
		for b.Loop() {
			info, err := o.Launch(ctx, LaunchSpec{Command: []string{"cat"}, Cwd: cwd})
			if err != nil {
				b.Fatal(err)
			}
			if err := o.CloseNode(ctx, info.Terminal); err != nil {
				b.Fatal(err)
			}
		}
	}
	report := func(b *testing.B, start time.Time) {
		per := float64(time.Since(start).Nanoseconds()) / float64(b.N)
		if base == 0 {
			base = per
			b.ReportMetric(1, "ratio")
			return
		}
		b.ReportMetric(per/base, "ratio")
	}
	b.Run("host=connected", func(b *testing.B) {
		start := time.Now()
		run(b)
		report(b, start)
	})
	b.Run("host=hung", func(b *testing.B) {
		f.Freeze()
		defer f.Thaw()
		stop := background()
		defer stop()
		start := time.Now()
		run(b)
		report(b, start)
	})
	b.Run("host=unreachable", func(b *testing.B) {
		f.Block()
		defer f.Unblock()
		if p, err := os.FindProcess(hostStatus(o, "big").MasterPID); err == nil && hostStatus(o, "big").MasterPID > 0 {
			p.Kill()
		}
		testenv.Eventually(b, time.Minute, func() bool { return hostStatus(o, "big").State != HostConnected }, testenv.Msg("the blocked host stays connected"))
		stop := background()
		defer stop()
		start := time.Now()
		run(b)
		report(b, start)
	})
}
