package record

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
)

// floodChunks is 40 MB of coloured log output in 4 KiB pieces, as tmux
// delivers a flood.
func floodChunks(size int) [][]byte {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%7d: \x1b[36mINFO\x1b[0m compiling package %d of the quick brown fox \x1b[32mok\x1b[0m é 漢\r\n", i, i%977)
	}
	data := []byte(b.String())[:size]
	var out [][]byte
	for len(data) > 0 {
		n := min(4096, len(data))
		out = append(out, data[:n])
		data = data[n:]
	}
	return out
}

// BenchmarkRecorderOutput measures what recording a 40 MB flood of
// coloured log output (4 KiB chunks, as tmux delivers a flood) costs:
//
//   - hot-path: the caller's goroutine (the engine's pump) in Output
//     alone: a copy into the writer's queue (the writer's work is measured
//     below, on its own goroutine);
//   - total: the CPU time of the whole process while a real Recorder
//     records the flood to a file and closes (caller, writer goroutine
//     encoding the cast, write system calls);
//   - discard: the same chunks through a bufio.Writer into io.Discard;
//   - logtext: screen.LogText on the same chunks, the per-byte work the
//     pump does anyway during a burst.
//
// Reported: MB/s of each, ns/B, and ratios against discard and logtext.
func BenchmarkRecorderOutput(b *testing.B) {
	const size = 40 << 20
	chunks := floodChunks(size)
	var discard, logtext, hot, total time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		w := bufio.NewWriterSize(io.Discard, 64<<10)
		for _, c := range chunks {
			w.Write(c)
		}
		w.Flush()
		discard += time.Since(t0)

		s := screen.New(80, 24)
		t0 = time.Now()
		for _, c := range chunks {
			s.LogText(c)
		}
		logtext += time.Since(t0)
		s.Close()

		// The hot path: a Recorder whose writer is not running; the queue
		// is emptied (as the writer would swap it) every 8 MiB.
		r := newRecorder(b.TempDir(), nil, nil, time.Now(), time.Now, Meta{})
		t0 = time.Now()
		for j, c := range chunks {
			r.Output(c)
			if j%2048 == 2047 {
				r.mu.Lock()
				r.q = r.q[:0]
				r.mu.Unlock()
			}
		}
		hot += time.Since(t0)

		rec, err := Start(filepath.Join(b.TempDir(), fmt.Sprintf("rec-%d", i)), Meta{Node: "bench", Columns: 80, Rows: 24})
		if err != nil {
			b.Fatal(err)
		}
		c0 := processCPU()
		for _, c := range chunks {
			rec.Output(c)
		}
		if err := rec.Close(); err != nil {
			b.Fatal(err)
		}
		total += processCPU() - c0
	}
	n := float64(size) * float64(b.N)
	mbs := func(d time.Duration) float64 { return n / d.Seconds() / 1e6 }
	b.ReportMetric(mbs(hot), "hot-MB/s")
	b.ReportMetric(mbs(total), "total-cpu-MB/s")
	b.ReportMetric(mbs(discard), "discard-MB/s")
	b.ReportMetric(mbs(logtext), "logtext-MB/s")
	b.ReportMetric(float64(hot.Nanoseconds())/n, "hot-ns/B")
	b.ReportMetric(float64(total.Nanoseconds())/n, "total-cpu-ns/B")
	b.ReportMetric(float64(hot)/float64(discard), "hot/discard")
	b.ReportMetric(float64(hot)/float64(logtext), "hot/logtext")
	b.ReportMetric(float64(total)/float64(logtext), "total/logtext")
}

// writeBenchRecording records what writeBenchCast writes through a
// Recorder and a mirror, as the engine does (a keyframe when the
// Recorder wants one), its clock at the cast's times. It returns the
// recording's directory.
func writeBenchRecording(tb testing.TB, dir, kind string, size int, dur time.Duration) string {
	tb.Helper()
	c, err := parseCast(mustRead(tb, writeBenchCast(tb, dir, kind, size, dur)))
	if err != nil {
		tb.Fatal(err)
	}
	var now time.Time
	origin := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	rd := filepath.Join(dir, kind+"-rec")
	now = origin
	r, err := start(rd, Meta{Node: "bench", Columns: c.info.Width, Rows: c.info.Height, Start: origin}, func() time.Time { return now })
	if err != nil {
		tb.Fatal(err)
	}
	mirror := screen.New(c.info.Width, c.info.Height)
	defer mirror.Close()
	var buf []byte
	for i := range c.events {
		e := &c.events[i]
		buf = c.data(e, buf[:0])
		now = origin.Add(time.Duration(e.us) * time.Microsecond)
		if err := mirror.Write(buf); err != nil {
			tb.Fatal(err)
		}
		r.Output(buf)
		if r.WantsKeyframe() {
			r.Keyframe(mirror.Snapshot(), mirror.Modes().MouseSGR)
		}
	}
	if err := r.Close(); err != nil {
		tb.Fatal(err)
	}
	return rd
}

func mustRead(tb testing.TB, p string) []byte {
	tb.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// writeBenchCast writes a cast of about size bytes over dur: scrolling
// coloured text (scroll) or full-screen redraws (tui), events every
// 50 ms. It returns the path.
func writeBenchCast(tb testing.TB, dir, kind string, size int, dur time.Duration) string {
	tb.Helper()
	p := filepath.Join(dir, kind+".cast")
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintf(w, `{"version":2,"width":80,"height":24}`+"\n")
	var ev []byte
	n, line, frame := 0, 0, 0
	nEvents := int(dur / (50 * time.Millisecond))
	per := size / nEvents
	var data strings.Builder
	for i := range nEvents {
		data.Reset()
		for data.Len() < per {
			switch kind {
			case "scroll":
				fmt.Fprintf(&data, "%7d: \x1b[3%dmINFO\x1b[0m step %d: the quick brown fox jumps over the lazy dog \x1b[32mok\x1b[0m\r\n", line, line%8, line%977)
				line++
			case "tui":
				fmt.Fprintf(&data, "\x1b[?25l\x1b[%d;1H\x1b[3%dm frame %d row %d: the quick brown fox jumps over the lazy dog \x1b[0m\x1b[K\x1b[?25h", 1+line%24, line%8, frame, line%24)
				line++
				if line%24 == 0 {
					frame++
				}
			}
		}
		ev = appendEventHead(ev[:0], int64(i)*50000, 'o')
		ev = appendJSONText(ev, []byte(data.String()))
		ev = appendEventTail(ev)
		w.Write(ev)
		n += len(ev)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
	return p
}

// BenchmarkFrameAtEnd: FrameAt one second before the end of a
// 10-minute, 50 MB cast. "first" opens the trace and asks at once (the
// builder replays everything, taking keyframes); "keyframed" asks an open
// trace again at moments near the end (a keyframe restore and at most
// 512 KiB of replay each). The "-recorded" kinds are the same output
// recorded as the engine records it, through a Recorder with a mirror
// (screen.Screen) handing it a keyframe every 1 MiB (keyframe.go): their
// first call replays from the last recorded keyframe.
func BenchmarkFrameAtEnd(b *testing.B) {
	for _, kind := range []string{"scroll", "tui", "scroll-recorded", "tui-recorded"} {
		var p string
		if k, ok := strings.CutSuffix(kind, "-recorded"); ok {
			p = writeBenchRecording(b, b.TempDir(), k, 50<<20, 10*time.Minute)
		} else {
			p = writeBenchCast(b, b.TempDir(), kind, 50<<20, 10*time.Minute)
		}
		b.Run(kind+"/first", func(b *testing.B) {
			c0 := processCPU()
			for b.Loop() {
				tr, err := Open(p)
				if err != nil {
					b.Fatal(err)
				}
				at := tr.DurationMS() - 1000
				s, _, err := tr.FrameAt(&at, "")
				if err != nil || len(s.Lines) != 24 {
					b.Fatal(err)
				}
				tr.Close()
			}
			b.ReportMetric(float64((processCPU()-c0).Milliseconds())/float64(b.N), "cpu-ms/op")
			tr, err := Open(p)
			if err == nil {
				n := 0
				for _, k := range tr.kfs {
					if k.recorded {
						n++
					}
				}
				b.ReportMetric(float64(n), "recorded-keyframes")
				tr.Close()
			}
		})
		b.Run(kind+"/keyframed", func(b *testing.B) {
			tr, err := Open(p)
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			tr.FrameAt(nil, "")
			end := tr.DurationMS()
			i := 0
			c0 := processCPU()
			for b.Loop() {
				at := end - 1000 - int64(i%50)*137
				i++
				if _, _, err := tr.FrameAt(&at, ""); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU()-c0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(len(tr.kfs)), "keyframes")
		})
	}
}

// processCPU is the user and system CPU time of this process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEncodeJSONText is the writer's encoding of output: base64 (as
// BenchmarkFlood40MB's flood) and coloured log lines with UTF-8.
func BenchmarkEncodeJSONText(b *testing.B) {
	var b64 strings.Builder
	for i := 0; b64.Len() < 4<<20; i++ {
		fmt.Fprintf(&b64, "%076x\r\n", i*7919)
	}
	var colour []byte
	for _, c := range floodChunks(4 << 20) {
		colour = append(colour, c...)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"base64", []byte(b64.String())}, {"colour", colour}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			var dst []byte
			for b.Loop() {
				dst = appendJSONText(dst[:0], tc.data)
			}
		})
	}
}
