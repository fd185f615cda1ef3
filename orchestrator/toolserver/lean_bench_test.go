package toolserver

import (
	"bytes"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkCtlVsTmux is issue 27's first target (issue 14's before
// it), side by side in one run: each iteration execs, in rotating order,
// the lite `termsprawlctl --session OP call session_info` (ctl), its
// `doctor` (doctor) and `hook claude Stop` with the hook's JSON on stdin
// in a node's session (hook), the full CLI as termsprawlctl was linked
// before issue 27 (cli.MainCtl with its kong-free hot path, a probe built
// from this tree: before), and `tmux -L SOCK display-message -p x`
// (tmux), against the same live orchestrator and private tmux server, so
// all see the same phase of a noisy machine. It reports each median
// (…-ms) and each ratio to tmux (ratio for call, target ≤ 1.0). The
// inittrace variant runs each CLI under GODEBUG=inittrace=1 and reports
// the median total package initialisation.
func BenchmarkCtlVsTmux(b *testing.B) {
	bin := buildCtl(b)
	before := buildProbe(b, "ctlfull", ctlFullProbe, "github.com/termsprawl/termsprawl v0.0.0")
	tmux, dir := apiNewState(b)
	s := apiStart(b, tmux, dir)
	node := apiLaunch(b, s.op(), "cat")
	nodeSession := tools.SessionPath(dir, node)
	var clean []string // no TMUX*, no TERMSPRAWL_*
	for _, kv := range tmuxtest.Env() {
		if !strings.HasPrefix(kv, "TERMSPRAWL_") {
			clean = append(clean, kv)
		}
	}
	type cmd struct {
		name  string
		argv  []string
		stdin string
	}
	cmds := []cmd{
		{"ctl", []string{bin, "--session", s.op(), "call", "session_info"}, ""},
		{"doctor", []string{bin, "--session", s.op(), "doctor"}, ""},
		{"hook", []string{bin, "--session", nodeSession, "hook", "claude", "Stop"}, `{"session_id":"s","hook_event_name":"Stop","stop_hook_active":false}`},
		{"before", []string{before, "--session", s.op(), "call", "session_info"}, ""},
		{"tmux", []string{"tmux", "-L", tmux.Socket, "display-message", "-p", "x"}, ""},
	}
	run := func(b *testing.B, env []string, c cmd) (time.Duration, []byte) {
		x := exec.Command(c.argv[0], c.argv[1:]...)
		x.Env = env
		x.Stdin = strings.NewReader(c.stdin)
		var stderr bytes.Buffer
		x.Stderr = &stderr
		start := time.Now()
		out, err := x.Output()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("%v: %v\n%s%s", c.argv, err, out, stderr.Bytes())
		}
		return d, stderr.Bytes()
	}
	b.Run("pair", func(b *testing.B) {
		for _, c := range cmds {
			run(b, clean, c)
		}
		times := make([][]time.Duration, len(cmds))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for k := range cmds {
				j := (i + k) % len(cmds)
				d, _ := run(b, clean, cmds[j])
				times[j] = append(times[j], d)
			}
		}
		mt := median(times[len(cmds)-1])
		for j, c := range cmds {
			m := median(times[j])
			b.ReportMetric(ms(m), c.name+"-ms")
			if c.name == "tmux" {
				continue
			}
			name := c.name + "-ratio"
			if c.name == "ctl" {
				name = "ratio"
			}
			b.ReportMetric(float64(m)/float64(mt), name)
		}
	})
	b.Run("inittrace", func(b *testing.B) {
		env := append(slices.Clone(clean), "GODEBUG=inittrace=1")
		var total, oldTotal []float64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			_, trace := run(b, env, cmds[0])
			sum, _ := initTotals(trace)
			total = append(total, sum)
			_, trace = run(b, env, cmds[3])
			sum, _ = initTotals(trace)
			oldTotal = append(oldTotal, sum)
		}
		for _, v := range [][]float64{total, oldTotal} {
			slices.Sort(v)
		}
		b.ReportMetric(total[len(total)/2], "init-ms")
		b.ReportMetric(oldTotal[len(oldTotal)/2], "before-init-ms")
	})
}

// initTotals sums the "ms clock" of every `init PKG @… ms, N ms clock`
// line of GODEBUG=inittrace=1 and returns the sum and the largest.
func initTotals(trace []byte) (sum, largest float64) {
	for _, line := range strings.Split(string(trace), "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || f[0] != "init" || f[6] != "clock," {
			continue
		}
		v, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			continue
		}
		sum += v
		largest = max(largest, v)
	}
	return sum, largest
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ctlFullProbe is termsprawlctl as it was linked before issue 27: the
// whole CLI (kong, the operation table, the engine's packages) with its
// kong-free hot path for call and doctor.
const ctlFullProbe = `package main

import (
	"os"

	"github.com/termsprawl/termsprawl/cli"
)

func main() { os.Exit(cli.MainCtl(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
`
