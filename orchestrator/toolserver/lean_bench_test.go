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
)

// BenchmarkCtlVsTmux is issue 14's first target, side by side in one run:
// each iteration execs `termsprawlctl --session OP call session_info`,
// the same CLI with mcp-go's server package linked as it was before the
// MCP server moved to the termsprawl binary (ctl-with-mcp, a probe built
// from this tree), and `tmux -L SOCK display-message -p x`, against the
// same live orchestrator and private tmux server, in rotating order, so
// all see the same phase of a noisy machine. It reports the median of
// each (ctl-ms, before-ms, tmux-ms) and the ratios to tmux (ratio, target
// ≤ 1.5; before-ratio). The inittrace variant runs termsprawlctl
// under GODEBUG=inittrace=1 and reports the median total package
// initialisation (init-ms) and the largest package's share (top-init-ms).
func BenchmarkCtlVsTmux(b *testing.B) {
	bin := buildCtl(b)
	before := buildProbe(b, "ctlwithmcp", ctlWithMCPProbe, "github.com/termsprawl/termsprawl v0.0.0",
		"github.com/mark3labs/mcp-go "+goModVersion(b, "github.com/mark3labs/mcp-go"))
	tmux, dir := apiNewState(b)
	s := apiStart(b, tmux, dir)
	apiLaunch(b, s.op(), "cat")
	var clean []string // no TMUX*, no TERMSPRAWL_*
	for _, kv := range tmuxtest.Env() {
		if !strings.HasPrefix(kv, "TERMSPRAWL_") {
			clean = append(clean, kv)
		}
	}
	ctl := []string{bin, "--session", s.op(), "call", "session_info"}
	old := []string{before, "--session", s.op(), "call", "session_info"}
	tm := []string{"tmux", "-L", tmux.Socket, "display-message", "-p", "x"}
	run := func(b *testing.B, env []string, argv ...string) (time.Duration, []byte) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		out, err := cmd.Output()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("%v: %v\n%s%s", argv, err, out, stderr.Bytes())
		}
		return d, stderr.Bytes()
	}
	b.Run("pair", func(b *testing.B) {
		cmds := [][]string{ctl, old, tm}
		for _, c := range cmds {
			run(b, clean, c...)
		}
		times := make([][]time.Duration, len(cmds))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for k := range cmds {
				j := (i + k) % len(cmds)
				d, _ := run(b, clean, cmds[j]...)
				times[j] = append(times[j], d)
			}
		}
		mc, mo, mt := median(times[0]), median(times[1]), median(times[2])
		b.ReportMetric(ms(mc), "ctl-ms")
		b.ReportMetric(ms(mo), "before-ms")
		b.ReportMetric(ms(mt), "tmux-ms")
		b.ReportMetric(float64(mc)/float64(mt), "ratio")
		b.ReportMetric(float64(mo)/float64(mt), "before-ratio")
	})
	b.Run("inittrace", func(b *testing.B) {
		env := append(slices.Clone(clean), "GODEBUG=inittrace=1")
		var total, top, oldTotal []float64
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			_, trace := run(b, env, ctl...)
			sum, largest := initTotals(trace)
			total = append(total, sum)
			top = append(top, largest)
			_, trace = run(b, env, old...)
			sum, _ = initTotals(trace)
			oldTotal = append(oldTotal, sum)
		}
		for _, v := range [][]float64{total, top, oldTotal} {
			slices.Sort(v)
		}
		b.ReportMetric(total[len(total)/2], "init-ms")
		b.ReportMetric(top[len(top)/2], "top-init-ms")
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

// ctlWithMCPProbe is termsprawlctl as it was linked before the MCP server
// moved out: the same CLI plus mcp-go's server package.
const ctlWithMCPProbe = `package main

import (
	"os"

	_ "github.com/mark3labs/mcp-go/server"

	"github.com/termsprawl/termsprawl/cli"
)

func main() { os.Exit(cli.MainCtl(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
`
