package toolserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkScale200 is issue 27's fifth target, on one orchestrator with
// TERMSPRAWL_SCALE_NODES (default 200) nodes running `sleep`, all through
// the tool server as clients see it (scripts/scale runs it):
//
//   - launch-s: every terminal_launch, 32 callers at once, until the last
//     answered (target ≤ 40 s for 200);
//   - list-p50-ms: terminal_list as the operator, in-process HTTP (≤ 20 ms);
//   - ls-p50-ms: the whole `termsprawl ls` process (≤ 50 ms);
//   - awake-cpu-pct / asleep-cpu-pct: the orchestrator's CPU (getrusage of
//     this process) over 10 s with every node quiet, first awake with
//     resting mirrors, then after IdleAfter (15 s here) put them to sleep
//     (≤ 2 % of a core);
//   - wake-p50-ms: a node's program writes a stamped line → a
//     terminal_wait_for on it returns, in-process over HTTP (≤ 2 ms), and
//     ctl-wake-p50-ms: the same through a whole `termsprawlctl call
//     terminal_wait_for` process, to its exit (≤ 5 ms);
//   - grep-p50-ms: the whole `termsprawl grep tick` process over every
//     node (issue 41: ≤ 2 s at 1,000);
//   - total-MiB: the PSS of the orchestrator (this process), its control
//     clients and its tmux servers, every node launched, and total-rest-MiB
//     the same once the quiet mirrors rest (issue 41: ≤ 512 MiB at 1,000
//     nodes).
//
// TERMSPRAWL_SCALE_PRINTING (scripts/scale: a fiftieth of the nodes)
// of them print a line every 200 ms instead of sleeping, during the whole
// run (the idle CPU figures then include them).
//
// The tool server's tests watch launches for 100 ms (LaunchWatch), not the
// production 1 s.
func BenchmarkScale200(b *testing.B) {
	n := scaleNodes(b)
	if _, err := exec.LookPath("bash"); err != nil {
		b.Skip("bash is not installed")
	}
	ctl := buildCtl(b)
	human := buildHuman(b)
	tmux, dir := apiNewState(b)
	s := apiStartWith(b, tmux, dir, orchestrator.Config{MaxNodes: n + 8, IdleAfter: 15 * time.Second})
	op := s.op()
	// Each figure is logged too: a later failure drops the metrics.
	report := func(v float64, unit string) {
		b.ReportMetric(v, unit)
		b.Logf("%s %.2f", unit, v)
	}
	for b.Loop() {
		// Launches.
		cwd := b.TempDir()
		ids := make([]string, n)
		start := time.Now()
		var wg sync.WaitGroup
		work := make(chan int)
		printing := 0
		if v, err := strconv.Atoi(os.Getenv("TERMSPRAWL_SCALE_PRINTING")); err == nil && v > 0 {
			printing = min(v, n)
		}
		for range 32 {
			wg.Go(func() {
				for i := range work {
					argv := []string{"sleep", "3600"}
					if i < printing {
						argv = []string{"sh", "-c", "while :; do echo tick; sleep 0.2; done"}
					}
					res := apiCall(b, op, "terminal_launch", apiM{"command": argv, "columns": 80, "rows": 24, "cwd": cwd})
					if !res.OK {
						b.Errorf("launch %d: %s", i, res.Error)
						continue
					}
					var r apiReceipt
					var info tools.NodeInfo
					if json.Unmarshal(res.Value, &r) != nil || json.Unmarshal(r.Result, &info) != nil {
						b.Errorf("launch %d: %s", i, res.Value)
					}
					ids[i] = info.Terminal
				}
			})
		}
		for i := range n {
			work <- i
		}
		close(work)
		wg.Wait()
		launch := time.Since(start)
		if b.Failed() {
			b.FailNow()
		}
		report(launch.Seconds(), "launch-s")
		report(float64(treePSSKiB(tmux.Socket))/1024, "total-MiB")

		// terminal_list and termsprawl ls.
		var list, ls []time.Duration
		for range 30 {
			t0 := time.Now()
			res := apiCall(b, op, "terminal_list", nil)
			list = append(list, time.Since(t0))
			if !res.OK {
				b.Fatalf("terminal_list: %s", res.Error)
			}
		}
		env := scaleEnv(dir, tmux)
		for range 10 {
			t0 := time.Now()
			cmd := exec.Command(human, "ls")
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			ls = append(ls, time.Since(t0))
			if err != nil || strings.Count(string(out), "\n") < n {
				b.Fatalf("termsprawl ls: %v\n%.500s", err, out)
			}
		}
		report(ms(median(list)), "list-p50-ms")
		report(ms(median(ls)), "ls-p50-ms")

		// grep over every node (issue 41: ≤ 2 s at 1,000), the whole
		// `termsprawl grep` process; the printing nodes' "tick" lines
		// match, so each of their histories is read whole.
		var grep []time.Duration
		for range 3 {
			t0 := time.Now()
			cmd := exec.Command(human, "grep", "--limit", "10000", "tick")
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			grep = append(grep, time.Since(t0))
			if printing > 0 && (err != nil || !strings.Contains(string(out), "tick")) {
				b.Fatalf("termsprawl grep: %v\n%.500s", err, out)
			}
		}
		report(ms(median(grep)), "grep-p50-ms")

		// Idle CPU: awake (mirrors rest after 5 s of quiet), then asleep.
		time.Sleep(6 * time.Second)
		report(cpuPercentOver(10*time.Second), "awake-cpu-pct")
		report(float64(treePSSKiB(tmux.Socket))/1024, "total-rest-MiB")
		time.Sleep(10 * time.Second) // past IdleAfter since the last observation
		report(cpuPercentOver(10*time.Second), "asleep-cpu-pct")

		// Wake latency at n nodes.
		wake, ctlWake := scaleWake(b, op, ctl, env, 40)
		report(ms(median(wake)), "wake-p50-ms")
		if len(ctlWake) > 0 {
			report(ms(median(ctlWake)), "ctl-wake-p50-ms")
		}

		b.StopTimer()
		var cw sync.WaitGroup
		work = make(chan int)
		for range 16 {
			cw.Go(func() {
				for i := range work {
					if res := apiCall(b, op, "terminal_close", apiM{"terminal": ids[i]}); !res.OK {
						b.Errorf("close %s: %s", ids[i], res.Error)
					}
				}
			})
		}
		for i := range n {
			work <- i
		}
		close(work)
		cw.Wait()
		b.StartTimer()
	}
}

// treePSSKiB is the PSS of this process, its children (the control
// clients) and the tmux servers whose command line names socket (the
// shards' sockets start with it), in KiB.
func treePSSKiB(socket string) int64 {
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	var total int64
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		ppid := 0
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 {
				ppid, _ = strconv.Atoi(f[1])
			}
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if pid != self && ppid != self && !strings.Contains(string(cmd), socket) {
			continue
		}
		if pid != self && ppid != self && !strings.HasPrefix(filepath.Base(strings.SplitN(string(cmd), "\x00", 2)[0]), "tmux") {
			continue // a node's program that names the socket
		}
		roll, err := os.ReadFile(filepath.Join("/proc", e.Name(), "smaps_rollup"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(roll), "\n") {
			if v, ok := strings.CutPrefix(l, "Pss:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				total += kb
			}
		}
	}
	return total
}

// scaleEnv is the environment of the CLIs against the benchmark's state.
func scaleEnv(dir string, tmux *tmuxtest.Server) []string {
	var env []string
	for _, kv := range tmuxtest.Env() {
		if !strings.HasPrefix(kv, "TERMSPRAWL_") {
			env = append(env, kv)
		}
	}
	return append(env, "TERMSPRAWL_HOME="+dir, "TERMSPRAWL_TMUX_SOCKET="+tmux.Socket)
}

// cpuPercentOver is this process's CPU (user + system) over d, in percent
// of one core.
func cpuPercentOver(d time.Duration) float64 {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c0, t0 := cpu(), time.Now()
	time.Sleep(d)
	return 100 * float64(cpu()-c0) / float64(time.Since(t0))
}

// stampScript reads lines from the FIFO $1 and prints each as
// "T=<epoch µs> K=<line>" in one write: the stamp is taken just before
// the line is written.
const stampScript = `exec 3<>"$1"; echo stamp-ready; while read -r l <&3; do printf 'T=%s K=%s\n' "${EPOCHREALTIME/./}" "$l"; done`

// scaleWake launches a stamp node and times rounds of "the program
// writes → the wait returns": in-process (tools.Call) and through a
// whole termsprawlctl process, alternately.
func scaleWake(b *testing.B, op, ctl string, env []string, rounds int) (inproc, whole []time.Duration) {
	fifo := filepath.Join(b.TempDir(), "stamp.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		b.Fatal(err)
	}
	node := apiLaunch(b, op, "bash", "-c", stampScript, "stamp", fifo)
	waitArgs := func(token string) apiM {
		return apiM{"terminal": node, "wait": "text", "text": token, "timeout_ms": 10000}
	}
	var snap tools.Snapshot
	if !testenv.Until(20*time.Second, func() bool {
		snap = tools.Snapshot{}
		apiOK(b, op, "terminal_snapshot", apiM{"terminal": node}, &snap)
		return strings.Contains(strings.Join(snap.Lines, "\n"), "stamp-ready")
	}) {
		b.Fatalf("stamp node not ready:\n%s", strings.Join(snap.Lines, "\n"))
	}
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	stampOf := func(token string) time.Time {
		var snap tools.Snapshot
		apiOK(b, op, "terminal_snapshot", apiM{"terminal": node}, &snap)
		for _, l := range snap.Lines {
			f := strings.Fields(l)
			if len(f) == 2 && f[1] == "K="+token {
				us, err := strconv.ParseInt(strings.TrimPrefix(f[0], "T="), 10, 64)
				if err == nil {
					return time.UnixMicro(us)
				}
			}
		}
		b.Fatalf("no stamp for %s on screen:\n%s", token, strings.Join(snap.Lines, "\n"))
		return time.Time{}
	}
	for i := range rounds {
		token := fmt.Sprintf("wake%05d", i)
		var done time.Time
		if i%2 == 0 {
			ch := make(chan tools.Result, 1)
			var at time.Time
			go func() {
				res := tools.Call(context.Background(), op, tools.Request{Operation: "terminal_wait_for", Args: apiArgs(b, waitArgs("K="+token))}, tools.CallOptions{})
				at = time.Now()
				ch <- res
			}()
			time.Sleep(20 * time.Millisecond) // let the wait park
			if _, err := fmt.Fprintln(w, token); err != nil {
				b.Fatal(err)
			}
			if res := <-ch; !res.OK {
				b.Fatalf("wait: %s", res.Error)
			}
			done = at
			inproc = append(inproc, done.Sub(stampOf(token)))
			continue
		}
		args, _ := json.Marshal(waitArgs("K=" + token))
		cmd := exec.Command(ctl, "--session", op, "call", "terminal_wait_for", string(args))
		cmd.Env = env
		cmd.Stdout = nil
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		time.Sleep(60 * time.Millisecond) // the process starts and its wait parks
		if _, err := fmt.Fprintln(w, token); err != nil {
			b.Fatal(err)
		}
		err := cmd.Wait()
		done = time.Now()
		if err != nil {
			// On a loaded machine the process may park after the line
			// was printed: that round is not counted.
			b.Logf("termsprawlctl wait, round %d: %v (not counted)", i, err)
			continue
		}
		whole = append(whole, done.Sub(stampOf(token)))
	}
	slices.Sort(inproc)
	slices.Sort(whole)
	return inproc, whole
}

// buildHuman builds the termsprawl binary.
func buildHuman(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "termsprawl")
	build := exec.Command("go", "build", "-o", bin, "github.com/termsprawl/termsprawl/cmd/termsprawl")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build termsprawl: %v\n%s", err, out)
	}
	return bin
}

// scaleNodes is TERMSPRAWL_SCALE_NODES, the node count of the 200-node
// benchmarks (200 when unset).
func scaleNodes(b *testing.B) int {
	v := os.Getenv("TERMSPRAWL_SCALE_NODES")
	if v == "" {
		return 200
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("TERMSPRAWL_SCALE_NODES=%q: want a positive number", v)
	}
	return n
}
