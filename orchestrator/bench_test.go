package orchestrator

// Benchmarks for the speed targets (docs/PERFORMANCE.md, section
// "orchestrator"). Every benchmark runs on private tmux servers
// (internal/tmuxtest); none touches the default server.
//
//	go test ./orchestrator/ -run '^$' -bench 'WakeLatency' -benchtime 200x
//	go test ./orchestrator/ -run '^$' -bench 'Flood40MB' -benchtime 1x -count 6
//	go test ./orchestrator/ -run '^$' -bench 'IdleNodeMemory' -benchtime 1x -count 6

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// ---------------------------------------------------------------------------
// Shared helpers

// newBenchOrchestrator is newTestOrchestrator for benchmarks; idleAfter is
// Config.IdleAfter (0: the default).
func newBenchOrchestrator(b *testing.B, idleAfter time.Duration) (*Orchestrator, *tmuxtest.Server) {
	return newBenchOrchestratorWith(b, idleAfter, nil)
}

// newBenchOrchestratorWith is newBenchOrchestrator with a chance to change
// the config.
func newBenchOrchestratorWith(b *testing.B, idleAfter time.Duration, mod func(*Config)) (*Orchestrator, *tmuxtest.Server) {
	b.Helper()
	srv := tmuxtest.New(b)
	dir := filepath.Join(b.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// TERMSPRAWL_BENCH_CLIENT_PER_NODE=1: a control client per node
	// (Config.ClientPerNode), to compare with the shared mirror client.
	cfg := Config{StateDir: dir, Socket: srv.Socket, IdleAfter: idleAfter, ClientPerNode: os.Getenv("TERMSPRAWL_BENCH_CLIENT_PER_NODE") == "1"}
	if path := os.Getenv("TERMSPRAWL_BENCH_LOG"); path != "" {
		// The orchestrator's debug log, to look into an odd iteration.
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		cfg.Logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if mod != nil {
		mod(&cfg)
	}
	o, err := New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(o.Close)
	return o, srv
}

// benchIdleAfter is the IdleAfter of the benchmarks that need nodes to
// fall asleep quickly.
const benchIdleAfter = 200 * time.Millisecond

// waitAsleep waits until every node in ids sleeps (setup only, not timed).
func waitAsleep(b *testing.B, o *Orchestrator, ids ...string) {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		n := o.node(id)
		if n == nil {
			b.Fatalf("node %s not found", id)
		}
		if !testenv.Until(time.Until(deadline), n.Asleep.Load) {
			b.Fatalf("node %s never fell asleep", id)
		}
	}
}

func bctx(b *testing.B, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	b.Cleanup(cancel)
	return ctx
}

// tmuxPath is the absolute path of tmux (nodes run with a minimal env).
func tmuxPath(b *testing.B) string {
	b.Helper()
	p, err := exec.LookPath("tmux")
	if err != nil {
		b.Skip("tmux is not installed")
	}
	return p
}

// tmuxRun runs one tmux CLI command on socket (with conf when not empty)
// and returns its stdout.
func tmuxRun(socket, conf string, args ...string) (string, error) {
	argv := []string{"-L", socket}
	if conf != "" {
		argv = append(argv, "-f", conf)
	}
	cmd := exec.Command("tmux", append(argv, args...)...)
	cmd.Env = tmuxtest.Env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

func mustTmux(b *testing.B, socket, conf string, args ...string) string {
	b.Helper()
	out, err := tmuxRun(socket, conf, args...)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// writeServerConf writes the orchestrator's own server configuration, so
// plain-tmux baselines run with the same history limit and options.
func writeServerConf(b *testing.B) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "tmux.conf")
	if err := os.WriteFile(p, []byte(TmuxServerConf), 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

// bareControlClient attaches `tmux -C attach -t =session` with stdout to
// /dev/null and stdin held open (EOF on stdin would detach it); commands
// are written to stdin. stop ends it and waits.
func bareControlClient(b *testing.B, socket, conf, session string, commands ...string) (pid int, stop func()) {
	b.Helper()
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("tmux", "-L", socket, "-f", conf, "-C", "attach-session", "-t", "="+session)
	cmd.Env = tmuxtest.Env()
	cmd.Stdout = devnull
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	for _, c := range commands {
		if _, err := io.WriteString(stdin, c+"\n"); err != nil {
			b.Fatal(err)
		}
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			stdin.Close() // detaches
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(2 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			devnull.Close()
		})
	}
	b.Cleanup(stop)
	return cmd.Process.Pid, stop
}

// waitClients waits until session has n clients attached.
func waitClients(b *testing.B, socket, session string, n int) {
	b.Helper()
	var out string
	var err error
	if !testenv.Until(10*time.Second, func() bool {
		out, err = tmuxRun(socket, "", "list-clients", "-t", "="+session, "-F", "#{client_pid}")
		return err == nil && len(strings.Fields(out)) >= n
	}) {
		b.Fatalf("session %s: %d clients never attached (%q, %v)", session, n, out, err)
	}
}

// percentile returns the q-quantile (0..1) of sorted values, nearest rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(float64(len(sorted))*q+0.999999) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

func reportLatencies(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(percentile(lat, 0.50)), "p50-µs")
	b.ReportMetric(us(percentile(lat, 0.99)), "p99-µs")
	b.ReportMetric(us(lat[len(lat)-1]), "max-µs")
}

// ---------------------------------------------------------------------------
// Wake latency

// echoStamp reads lines from the FIFO argv[1] and prints each as
// "T=<time.time_ns()> K=<line>" with one write(2): the stamp is read from
// the clock just before the byte is written, so the benchmark measures
// from the moment the program wrote, not from when it was asked to.
const echoStamp = `import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
os.write(1, b"stamp-ready\n")
buf = b""
while True:
    d = os.read(fd, 4096)
    if not d:
        break
    buf += d
    while b"\n" in buf:
        line, buf = buf.split(b"\n", 1)
        os.write(1, b"T=%d K=%s\n" % (time.time_ns(), line))
`

var stampRE = regexp.MustCompile(`T=(\d+) K=(\S+)`)

// stampOf finds the stamp printed with token in text.
func stampOf(text, token string) (time.Time, bool) {
	for _, m := range stampRE.FindAllStringSubmatch(text, -1) {
		if "K="+m[2] == token {
			ns, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			return time.Unix(0, ns), true
		}
	}
	return time.Time{}, false
}

// python3 returns the real interpreter (not a pyenv shim script).
func python3(b *testing.B) string {
	b.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		testenv.SkipOrFail(b, "python3 is not available (apt-get install python3): %v", err)
	}
	return strings.TrimSpace(string(out))
}

// stampNode launches echoStamp on a node and returns the node id and the
// FIFO, opened read-write so opening never blocks and the reader never
// sees EOF.
func stampNode(b *testing.B, o *Orchestrator) (string, *os.File) {
	b.Helper()
	return stampNodeOn(b, o, "")
}

// BenchmarkWakeLatency measures from the moment the program writes a token
// to the moment a waiter learns about it: event (a text WaitFor, woken by
// the control-mode stream) against poll50ms (capture-pane through the tmux
// CLI every 50 ms, what polling tools do). ns/op is the iteration cycle
// (including a random pause before each write); the figures are the
// p50/p99 metrics.
func BenchmarkWakeLatency(b *testing.B) {
	b.Run("event", func(b *testing.B) {
		o, _ := newBenchOrchestrator(b, 0)
		id, fifo := stampNode(b, o)
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			token := fmt.Sprintf("K=ev%07d", i)
			snap, err := o.Snapshot(context.Background(), id)
			if err != nil {
				b.Fatal(err)
			}
			rev := snap.Revision
			type res struct {
				r   tools.WaitResult
				err error
				at  time.Time
			}
			done := make(chan res, 1)
			go func() {
				r, err := o.WaitFor(context.Background(), id, tools.WaitSpec{Wait: tools.WaitText, Text: token, After: &rev, TimeoutMS: 10000})
				done <- res{r, err, time.Now()}
			}()
			// Let the waiter park (After=rev makes the result correct
			// either way; the pause keeps it honest about waking).
			time.Sleep(time.Millisecond + rand.N(9*time.Millisecond))
			if _, err := fifo.WriteString(token[2:] + "\n"); err != nil {
				b.Fatal(err)
			}
			r := <-done
			if r.err != nil || !r.r.Matched {
				b.Fatalf("iteration %d: wait %+v %v", i, r.r, r.err)
			}
			snap, err = o.Snapshot(context.Background(), id)
			if err != nil {
				b.Fatal(err)
			}
			written, ok := stampOf(strings.Join(snap.Lines, "\n"), token)
			if !ok {
				b.Fatalf("iteration %d: no stamp for %s on screen:\n%s", i, token, strings.Join(snap.Lines, "\n"))
			}
			lat = append(lat, r.at.Sub(written))
		}
		b.StopTimer()
		reportLatencies(b, lat)
	})
	b.Run("poll50ms", func(b *testing.B) {
		o, srv := newBenchOrchestrator(b, 0)
		id, fifo := stampNode(b, o)
		tmux := tmuxPath(b)
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			token := fmt.Sprintf("K=po%07d", i)
			type res struct {
				text string
				at   time.Time
				err  error
			}
			done := make(chan res, 1)
			stop := make(chan struct{})
			go func() {
				tick := time.NewTicker(50 * time.Millisecond)
				defer tick.Stop()
				for {
					cmd := exec.Command(tmux, "-L", srv.Socket, "capture-pane", "-p", "-t", "=ts-"+id+":")
					cmd.Env = tmuxtest.Env()
					out, err := cmd.Output()
					if err != nil {
						done <- res{err: err}
						return
					}
					if bytes.Contains(out, []byte(token)) {
						done <- res{text: string(out), at: time.Now()}
						return
					}
					select {
					case <-tick.C:
					case <-stop:
						return
					}
				}
			}()
			// A uniformly random phase against the poller's ticks.
			time.Sleep(rand.N(50 * time.Millisecond))
			if _, err := fifo.WriteString(token[2:] + "\n"); err != nil {
				b.Fatal(err)
			}
			var r res
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				close(stop)
				b.Fatalf("iteration %d: poller never saw %s", i, token)
			}
			if r.err != nil {
				b.Fatal(r.err)
			}
			written, ok := stampOf(r.text, token)
			if !ok {
				b.Fatalf("iteration %d: no stamp for %s in capture:\n%s", i, token, r.text)
			}
			lat = append(lat, r.at.Sub(written))
		}
		b.StopTimer()
		reportLatencies(b, lat)
	})
}

// ---------------------------------------------------------------------------
// Flood

const floodBytes = 40 << 20

// floodFile writes floodBytes of base64 text in 76-column lines.
func floodFile(b *testing.B) string { return floodFileOf(b, floodBytes) }

// floodFileOf writes size bytes of base64 text in 76-column lines.
func floodFileOf(b *testing.B, size int) string {
	b.Helper()
	p := filepath.Join(b.TempDir(), "flood.txt")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.NewChaCha8([32]byte{1, 2, 3})
	raw := make([]byte, 57) // 57 bytes = one 76-column base64 line
	line := make([]byte, 77)
	for written := 0; written < size; written += len(line) {
		rng.Read(raw)
		base64.StdEncoding.Encode(line, raw)
		line[76] = '\n'
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return p
}

// floodWaitSpec is the k-th wait kept active during a flood: waits an
// agent would use (text, and line regexes), for strings that never come.
func floodWaitSpec(k int, after *uint64) tools.WaitSpec {
	if k%4 == 3 {
		return tools.WaitSpec{Wait: tools.WaitRegex, Pattern: fmt.Sprintf(`^(ok|FAIL) +never-%d$`, k), After: after, TimeoutMS: 40000}
	}
	return tools.WaitSpec{Wait: tools.WaitText, Text: fmt.Sprintf("never-appears-%d", k), After: after, TimeoutMS: 40000}
}

// floodScript blocks until channel goCh is signalled, cats file, prints
// endTok and signals doneCh.
func floodScript(tmux, socket, file, goCh, doneCh, endTok string) string {
	return fmt.Sprintf("%s -L %s wait-for %s; cat %s; echo %s; %s -L %s wait-for -S %s",
		tmux, socket, goCh, file, endTok, tmux, socket, doneCh)
}

// procCPU returns the user+system CPU time of pid from /proc/PID/stat.
func procCPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)          // utime, field 14
	st, _ := strconv.ParseInt(f[12], 10, 64)          // stime, field 15
	return time.Duration(ut+st) * (time.Second / 100) // USER_HZ is 100 on Linux
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// floodCPU accumulates CPU time spent during the timed floods.
type floodCPU struct{ self, server, clients time.Duration }

func (c *floodCPU) report(b *testing.B, withSelf bool) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
	if withSelf {
		b.ReportMetric(ms(c.self), "orch-cpu-ms/op")
		if c.server > 0 {
			b.ReportMetric(float64(c.self)/float64(c.server), "orch/server-cpu")
		}
	}
	b.ReportMetric(ms(c.server), "tmux-server-cpu-ms/op")
	b.ReportMetric(ms(c.clients), "tmux-clients-cpu-ms/op")
}

// timeFlood signals goCh and returns when doneCh is signalled, adding the
// CPU time the orchestrator (this process), the tmux server and the
// control clients spent meanwhile to cpu.
func timeFlood(b *testing.B, socket, goCh, doneCh string, cpu *floodCPU) time.Duration {
	b.Helper()
	server := serverPID(b, socket)
	clients := tmuxtest.ControlClients(socket)
	sum := func() (time.Duration, time.Duration, time.Duration) {
		var c time.Duration
		for _, pid := range clients {
			c += procCPU(pid)
		}
		return selfCPU(), procCPU(server), c
	}
	s0, v0, c0 := sum()
	start := time.Now()
	b.StartTimer()
	mustTmux(b, socket, "", "wait-for", "-S", goCh)
	mustTmux(b, socket, "", "wait-for", doneCh)
	b.StopTimer()
	d := time.Since(start)
	s1, v1, c1 := sum()
	cpu.self += s1 - s0
	cpu.server += v1 - v0
	cpu.clients += c1 - c0
	return d
}

// BenchmarkFlood40MB times `cat` of 40 MB of base64 in a pane: through
// the orchestrator with a text wait active (waiting), with no wait but
// the node kept awake (awake: IdleAfter negative, so the output still
// reaches the orchestrator and goes through the burst path), and with
// the node asleep before the flood starts (unobserved: IdleAfter 200 ms,
// pane output off, emulator released); and in a plain tmux session with
// a bare control client writing to /dev/null (bare), the same client with
// the pane's output turned off by `refresh-client -A '%P:off'`
// (bare-paneoff) or no client at all (noclient).
func BenchmarkFlood40MB(b *testing.B) {
	file := floodFile(b)
	fi, err := os.Stat(file)
	if err != nil {
		b.Fatal(err)
	}
	size := fi.Size()
	tmux := tmuxPath(b)

	// mode: "waiting", "awake" or "unobserved" (see above).
	orch := func(mode string) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetBytes(size)
			waiting := mode == "waiting" || mode == "waiting8"
			nwaits := 1
			if mode == "waiting8" {
				nwaits = 8
			}
			idle := time.Duration(0) // the default: nothing sleeps during a run
			switch mode {
			case "awake", "recorded":
				idle = -1
			case "unobserved":
				idle = benchIdleAfter
			}
			o, srv := newBenchOrchestrator(b, idle)
			b.StopTimer()
			b.ResetTimer()
			var lags []time.Duration
			var cpu floodCPU
			spurious, reseeds := 0, 0
			for i := range b.N {
				goCh, doneCh := fmt.Sprintf("go-%d", i), fmt.Sprintf("done-%d", i)
				endTok := fmt.Sprintf("FLOOD-END-%d", i)
				info, err := o.Launch(bctx(b, 20*time.Second), LaunchSpec{
					Command: []string{"sh", "-c", floodScript(tmux, srv.Socket, file, goCh, doneCh, endTok)},
					Cwd:     b.TempDir(), Columns: 80, Rows: 24, Record: mode == "recorded"})
				if err != nil {
					b.Fatal(err)
				}
				id := info.Terminal
				snap, err := o.Snapshot(context.Background(), id)
				if err != nil {
					b.Fatal(err)
				}
				rev0 := snap.Revision
				if mode == "unobserved" {
					waitAsleep(b, o, id)
				}
				n := o.node(id)
				n.Mu.Lock()
				reseeds0 := n.Reseeds
				n.Mu.Unlock()
				var waitEnded chan time.Time
				cancel := func() {}
				if waiting {
					var ctx context.Context
					ctx, cancel = context.WithCancel(context.Background())
					waitEnded = make(chan time.Time, nwaits)
					for k := range nwaits {
						go func() {
							o.WaitFor(ctx, id, floodWaitSpec(k, &rev0))
							waitEnded <- time.Now()
						}()
					}
					time.Sleep(20 * time.Millisecond) // let them park
				}
				timeFlood(b, srv.Socket, goCh, doneCh, &cpu)
				doneAt := time.Now()
				n.Mu.Lock()
				reseeds += n.Reseeds - reseeds0
				n.Mu.Unlock()
				if waiting {
					select {
					case at := <-waitEnded:
						b.Fatalf("the wait ended %v before the flood did: measurement invalid", doneAt.Sub(at))
					default:
					}
				}
				// How far behind the mirror is when the program is done. A
				// text wait for the program's last line may fail with
				// "exited before the text wait was satisfied" while the
				// pump is still applying (see docs/PERFORMANCE.md): count
				// those, and time the lag by polling the snapshot.
				r, err := o.WaitFor(bctx(b, 45*time.Second), id, tools.WaitSpec{Wait: tools.WaitText, Text: endTok, After: &rev0, TimeoutMS: 40000})
				if err != nil || !r.Matched {
					spurious++
					b.Logf("iteration %d: the wait for the last line failed: %+v %v", i, r, err)
				}
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
					snap, err := o.Snapshot(context.Background(), id)
					if err == nil && slices.Contains(snap.Lines, endTok) {
						lags = append(lags, time.Since(doneAt))
						break
					}
					if time.Now().After(deadline) {
						b.Logf("iteration %d: mirror never showed %s", i, endTok)
						break
					}
				}
				cancel()
				if waiting {
					for range nwaits {
						<-waitEnded
					}
				}
				if err := o.CloseNode(bctx(b, 20*time.Second), id); err != nil {
					b.Fatal(err)
				}
			}
			if len(lags) > 0 {
				slices.Sort(lags)
				b.ReportMetric(float64(lags[len(lags)/2])/float64(time.Millisecond), "mirror-lag-ms")
			}
			b.ReportMetric(float64(spurious)/float64(b.N), "exited-wait-errors/op")
			b.ReportMetric(float64(reseeds)/float64(b.N), "reseeds/op")
			cpu.report(b, true)
		}
	}
	// mode: "bare" (a control client), "paneoff" (a control client that
	// turned the pane's output off: the "unobserved" lever), "" (none).
	plain := func(mode string) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetBytes(size)
			srv := tmuxtest.New(b)
			conf := writeServerConf(b)
			// A keeper session holds the server up between iterations.
			mustTmux(b, srv.Socket, conf, "new-session", "-d", "-s", "keep", "-x", "80", "-y", "24", "--", "sleep", "infinity")
			b.StopTimer()
			b.ResetTimer()
			var cpu floodCPU
			for i := range b.N {
				s := fmt.Sprintf("flood-%d", i)
				goCh, doneCh := fmt.Sprintf("go-%d", i), fmt.Sprintf("done-%d", i)
				mustTmux(b, srv.Socket, conf, "new-session", "-d", "-s", s, "-x", "80", "-y", "24", "--",
					"sh", "-c", floodScript(tmux, srv.Socket, file, goCh, doneCh, "FLOOD-END"))
				stop := func() {}
				switch mode {
				case "bare":
					_, stop = bareControlClient(b, srv.Socket, conf, s)
				case "paneoff":
					pane := strings.TrimSpace(mustTmux(b, srv.Socket, "", "display-message", "-p", "-t", "="+s+":", "#{pane_id}"))
					_, stop = bareControlClient(b, srv.Socket, conf, s, "refresh-client -A '"+pane+":off'")
				}
				if mode != "" {
					waitClients(b, srv.Socket, s, 1)
					time.Sleep(50 * time.Millisecond) // let the client's commands run
				}
				timeFlood(b, srv.Socket, goCh, doneCh, &cpu)
				stop()
				mustTmux(b, srv.Socket, "", "kill-session", "-t", "="+s)
			}
			cpu.report(b, false)
		}
	}
	b.Run("waiting", orch("waiting"))
	b.Run("waiting8", orch("waiting8"))
	b.Run("awake", orch("awake"))
	// recorded / awake is the recording's overhead (CONTRACT §13).
	b.Run("recorded", orch("recorded"))
	b.Run("unobserved", orch("unobserved"))
	b.Run("bare", plain("bare"))
	b.Run("bare-paneoff", plain("paneoff"))
	b.Run("noclient", plain(""))
}

// ---------------------------------------------------------------------------
// Idle memory

const idleNodes = 100

// pssKiB reads the Pss line of /proc/PID/smaps_rollup.
func pssKiB(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("pid %d: no Pss in smaps_rollup", pid)
}

func sumPSS(b *testing.B, pids []int) int64 {
	b.Helper()
	var sum int64
	for _, pid := range pids {
		k, err := pssKiB(pid)
		if err != nil {
			b.Fatalf("read PSS: %v", err)
		}
		sum += k
	}
	return sum
}

func serverPID(b *testing.B, socket string) int {
	b.Helper()
	out := mustTmux(b, socket, "", "display-message", "-p", "#{pid}")
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		b.Fatalf("server pid %q: %v", out, err)
	}
	return pid
}

// memSample is one reading of everything that grows with nodes.
type memSample struct {
	server, clients, self int64 // PSS, KiB
	heap, stack           int64 // Go HeapInuse, StackInuse, KiB
	nclients              int
}

// sampleMem reads the memory of this process and of the tmux servers on
// sockets and their control clients. The processes are listed first and
// this process's PSS is read right after the GC: listing them reads every
// /proc/PID/cmdline, whose garbage (about 2 MiB a pass) would otherwise
// land on pages the GC has just returned and count as the orchestrator's.
func sampleMem(b *testing.B, sockets ...string) memSample {
	b.Helper()
	var clients, servers []int
	for _, socket := range sockets {
		clients = append(clients, tmuxtest.ControlClients(socket)...)
		servers = append(servers, serverPID(b, socket))
	}
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	self, err := pssKiB(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	return memSample{
		server: sumPSS(b, servers), clients: sumPSS(b, clients), self: self,
		heap: int64(ms.HeapInuse >> 10), stack: int64(ms.StackInuse >> 10), nclients: len(clients),
	}
}

// sockets lists the tmux servers (shards) the orchestrator runs.
func sockets(o *Orchestrator) []string {
	var out []string
	for _, s := range o.shards.List() {
		out = append(out, s.Socket())
	}
	return out
}

func perNode(after, before int64) float64 { return float64(after-before) / idleNodes }

// createSessions starts n idle sessions s0..s(n-1) with one tmux
// invocation per 25 sessions.
func createSessions(b *testing.B, socket, conf string, n int) {
	b.Helper()
	for start := 0; start < n; start += 25 {
		var args []string
		for i := start; i < min(start+25, n); i++ {
			if len(args) > 0 {
				args = append(args, ";")
			}
			args = append(args, "new-session", "-d", "-s", fmt.Sprintf("s%d", i), "--", "sleep", "3600")
		}
		mustTmux(b, socket, conf, args...)
	}
}

// BenchmarkIdleNodeMemory measures what 100 idle nodes (`sleep 3600`,
// default size) cost: PSS of the tmux server and of the control clients,
// the orchestrator's Go heap and stacks and the test process's PSS;
// total-PSS-KiB/node is the growth of all three (test process, control
// clients, server) per node. orchestrator-awake never lets a node sleep
// (IdleAfter negative; -live: mirrors never rest, -printing: the same
// with each node printing a line every 200 ms, -resting: mirrors rest
// after 1 s); orchestrator-asleep lets them sleep after 200 ms
// and measures once every node sleeps. The tmux-* cases are baselines
// without an orchestrator (no client, one bare client per session, one
// client on a hub session linking every window); emulator is the
// mirror's screen.Screen alone. The timer runs, so ns/op is the whole
// set-up and measurement and `-bench .` with the default -benchtime stops
// after one iteration instead of multiplying b.N (use -benchtime 1x).
func BenchmarkIdleNodeMemory(b *testing.B) {
	orch := func(idle time.Duration, rest bool) func(b *testing.B) {
		return func(b *testing.B) {
			for range b.N {
				benchIdleOrchestrator(b, idle, rest)
			}
		}
	}
	b.Run("orchestrator-awake-live", orch(-1, false))
	b.Run("orchestrator-awake-printing", func(b *testing.B) {
		for range b.N {
			benchIdleOrchestratorCmd(b, -1, false, printingNodeCommand)
		}
	})
	// The same with a control client per node (Config.ClientPerNode, the
	// layout before issue 41), side by side in one run.
	b.Run("orchestrator-awake-printing-client-per-node", func(b *testing.B) {
		b.Setenv("TERMSPRAWL_BENCH_CLIENT_PER_NODE", "1")
		for range b.N {
			benchIdleOrchestratorCmd(b, -1, false, printingNodeCommand)
		}
	})
	b.Run("orchestrator-awake-resting", orch(-1, true))
	b.Run("orchestrator-asleep", orch(benchIdleAfter, false))
	plain := func(mode string) func(b *testing.B) {
		return func(b *testing.B) {
			for range b.N {
				srv := tmuxtest.New(b)
				conf := writeServerConf(b)
				mustTmux(b, srv.Socket, conf, "new-session", "-d", "-s", "keep", "--", "sleep", "infinity")
				time.Sleep(300 * time.Millisecond)
				before := sampleMem(b, srv.Socket)
				createSessions(b, srv.Socket, conf, idleNodes)
				switch mode {
				case "per-session":
					for i := range idleNodes {
						bareControlClient(b, srv.Socket, conf, fmt.Sprintf("s%d", i))
					}
					for i := range idleNodes {
						waitClients(b, srv.Socket, fmt.Sprintf("s%d", i), 1)
					}
				case "one-client":
					mustTmux(b, srv.Socket, conf, "new-session", "-d", "-s", "hub", "--", "sleep", "infinity")
					for start := 0; start < idleNodes; start += 25 {
						var args []string
						for i := start; i < min(start+25, idleNodes); i++ {
							if len(args) > 0 {
								args = append(args, ";")
							}
							args = append(args, "link-window", "-d", "-s", fmt.Sprintf("=s%d:0", i), "-t", fmt.Sprintf("=hub:%d", i+1))
						}
						mustTmux(b, srv.Socket, conf, args...)
					}
					bareControlClient(b, srv.Socket, conf, "hub")
					waitClients(b, srv.Socket, "hub", 1)
				}
				time.Sleep(time.Second)
				after := sampleMem(b, srv.Socket)
				b.ReportMetric(perNode(after.clients, before.clients), "client-PSS-KiB/node")
				b.ReportMetric(perNode(after.server, before.server), "server-PSS-KiB/node")
			}
		}
	}
	b.Run("tmux-noclient", plain("none"))
	b.Run("tmux-client-per-session", plain("per-session"))
	b.Run("tmux-one-client", plain("one-client"))
	b.Run("emulator", func(b *testing.B) {
		for range b.N {
			var ms0, ms1 runtime.MemStats
			runtime.GC()
			debug.FreeOSMemory()
			runtime.ReadMemStats(&ms0)
			self0, _ := pssKiB(os.Getpid())
			scrs := make([]*screen.Screen, idleNodes)
			for i := range scrs {
				scrs[i] = screen.New(DefaultColumns, DefaultRows)
			}
			runtime.GC()
			debug.FreeOSMemory()
			runtime.ReadMemStats(&ms1)
			self1, _ := pssKiB(os.Getpid())
			b.ReportMetric(perNode(int64(ms1.HeapInuse>>10), int64(ms0.HeapInuse>>10)), "heap-KiB/node")
			b.ReportMetric(perNode(self1, self0), "self-PSS-KiB/node")
			for _, s := range scrs {
				s.Close()
			}
		}
	})
}

// benchIdleOrchestrator launches idleNodes idle nodes on an orchestrator
// with Config.IdleAfter idle and reports what they cost. With idle > 0 it
// samples once every node sleeps.
//
// rest lets the awake nodes' mirrors rest (Config.RestAfter 1 s) and
// measures once every one does; without it they never rest.
func benchIdleOrchestrator(b *testing.B, idle time.Duration, rest bool) {
	benchIdleOrchestratorCmd(b, idle, rest, []string{"sleep", "3600"})
}

// printingNodeCommand prints a numbered line every 200 ms: issue 27's
// awake node (orchestrator-awake-printing).
var printingNodeCommand = []string{"sh", "-c", `i=0; while :; do i=$((i+1)); echo "line $i of a node printing every 200 ms"; sleep 0.2; done`}

// idleLaunchers is how many launches benchIdleOrchestratorCmd runs at
// once: a node whose program prints nothing waits readyMax (2 s) in its
// launch, so one at a time 100 launches take 200 s.
const idleLaunchers = 10

// benchIdleOrchestratorCmd is benchIdleOrchestrator with each node
// running cmd. With TERMSPRAWL_BENCH_HEAPPROFILE set it writes a heap
// profile there after the measurement (go tool pprof -sample_index
// inuse_space); TERMSPRAWL_BENCH_SHARD_SIZE sets Config.ShardSize.
func benchIdleOrchestratorCmd(b *testing.B, idle time.Duration, rest bool, cmd []string) {
	if os.Getenv("TERMSPRAWL_BENCH_HEAPPROFILE") != "" {
		runtime.MemProfileRate = 4096 // before anything of the nodes is allocated
	}
	o, srv := newBenchOrchestratorWith(b, idle, func(c *Config) {
		setRestAfter(c, rest)
		if v := os.Getenv("TERMSPRAWL_BENCH_SHARD_SIZE"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				b.Fatalf("TERMSPRAWL_BENCH_SHARD_SIZE: %v", err)
			}
			c.ShardSize = n
		}
	})
	time.Sleep(300 * time.Millisecond)
	before := sampleMem(b, srv.Socket)
	start := time.Now()
	dir := b.TempDir()
	ids := make([]string, idleNodes)
	errs := make([]error, idleNodes)
	var wg sync.WaitGroup
	next := make(chan int)
	for range idleLaunchers {
		wg.Go(func() {
			for i := range next {
				info, err := o.Launch(bctx(b, 20*time.Second), LaunchSpec{Command: cmd, Cwd: dir})
				ids[i], errs[i] = info.Terminal, err
			}
		})
	}
	for i := range idleNodes {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			b.Fatalf("launch %d: %v", i, err)
		}
	}
	launch := time.Since(start)
	time.Sleep(time.Second) // seeds, heal timers and clients settle
	asleep := 0
	if idle > 0 {
		waitAsleep(b, o, ids...)
	}
	if rest {
		waitResting(b, o, ids...)
	}
	for _, id := range ids {
		if o.node(id).Asleep.Load() {
			asleep++
		}
	}
	after := sampleMem(b, sockets(o)...)
	// An admin, a waiter and a mirror client per shard after the first
	// (the first's are in the baseline); with a client per node, those
	// instead of the mirror.
	want := (shardClients) * (len(sockets(o)) - 1)
	if o.cfg.ClientPerNode {
		want = idleNodes + (shardClients-1)*(len(sockets(o))-1)
	}
	if got := after.nclients - before.nclients; got != want {
		b.Fatalf("%d new control clients for %d nodes on %d shards, want %d", got, idleNodes, len(sockets(o)), want)
	}
	b.ReportMetric(float64(len(sockets(o))), "shards")
	b.ReportMetric(float64(launch.Milliseconds())/idleNodes, "launch-ms/node")
	b.ReportMetric(float64(asleep), "asleep-nodes")
	b.ReportMetric(perNode(after.clients, before.clients), "client-PSS-KiB/node")
	b.ReportMetric(perNode(after.server, before.server), "server-PSS-KiB/node")
	b.ReportMetric(perNode(after.heap, before.heap), "heap-KiB/node")
	b.ReportMetric(perNode(after.stack, before.stack), "stack-KiB/node")
	b.ReportMetric(perNode(after.self, before.self), "self-PSS-KiB/node")
	b.ReportMetric(perNode(after.self+after.clients, before.self+before.clients), "orch+clients-PSS-KiB/node")
	b.ReportMetric(perNode(after.self+after.clients+after.server, before.self+before.clients+before.server), "total-PSS-KiB/node")
	if path := os.Getenv("TERMSPRAWL_BENCH_HEAPPROFILE"); path != "" {
		writeHeapProfile(b, path)
	}
	// Close the nodes and the orchestrator now, not at the end of the
	// whole benchmark, so the next run starts from the same baseline.
	o.Close()
	srv.Kill()
}

// writeHeapProfile writes the heap profile of this process to path (the
// heap as of the last GC, which sampleMem has just run).
func writeHeapProfile(b *testing.B, path string) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatalf("heap profile: %v", err)
	}
}
