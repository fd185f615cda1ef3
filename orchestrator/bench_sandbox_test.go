package orchestrator

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkSandboxCost launches 50 nodes through the production path,
// unsandboxed and in the workspace sandbox, and reports the mean launch
// time and the memory (PSS, KiB) of each node's processes outside the
// engine and tmux: the program alone, or bwrap's two processes and the
// program (docs/PERFORMANCE.md).
//
//	go test ./orchestrator/ -run '^$' -bench 'SandboxCost' -benchtime 1x
func BenchmarkSandboxCost(b *testing.B) {
	testenv.LookPath(b, "bwrap", "apt-get install bubblewrap")
	nodes := 50
	if v, err := strconv.Atoi(os.Getenv("TERMSPRAWL_SANDBOX_BENCH_NODES")); err == nil && v > 0 {
		nodes = v
	}
	b.Setenv("HOME", b.TempDir()) // Prepare makes the cache mount points there
	for _, profile := range []string{"none", "workspace"} {
		b.Run(profile, func(b *testing.B) {
			srv := tmuxtest.New(b)
			dir := filepath.Join(b.TempDir(), "state")
			if err := tools.EnsureStateDir(dir); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			o, err := New(ctx, Config{StateDir: dir, Socket: srv.Socket, LaunchWatch: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			cwd := b.TempDir()
			for b.Loop() {
				var took time.Duration
				ids := make([]string, 0, nodes)
				for range nodes {
					start := time.Now()
					info, err := o.Launch(ctx, LaunchSpec{Command: []string{"sleep", "600"}, Cwd: cwd, Sandbox: profile})
					took += time.Since(start)
					if err != nil {
						b.Fatal(err)
					}
					ids = append(ids, info.Terminal)
				}
				b.StopTimer()
				var pss int
				for _, id := range ids {
					n := o.node(id)
					var pid int
					testenv.Until(10*time.Second, func() bool { pid = n.Pid(); return pid > 0 })
					// The tree settles once the program runs.
					testenv.Until(10*time.Second, func() bool { return treeHas(pid, "sleep") })
					pss += treePSS(pid)
				}
				b.ReportMetric(float64(took.Microseconds())/1000/float64(nodes), "ms/launch")
				b.ReportMetric(float64(pss)/float64(nodes), "KiB-PSS/node")
				for _, id := range ids {
					if err := o.CloseNode(ctx, id); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
		})
	}
}

// procChildren maps each pid to its children, from /proc.
func procChildren() map[int][]int {
	out := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			out[ppid] = append(out[ppid], pid)
		}
	}
	return out
}

func procTree(pid int) []int {
	kids := procChildren()
	all := []int{pid}
	for i := 0; i < len(all); i++ {
		all = append(all, kids[all[i]]...)
	}
	return all
}

func treeHas(pid int, comm string) bool {
	for _, p := range procTree(pid) {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); strings.TrimSpace(string(b)) == comm {
			return true
		}
	}
	return false
}

// treePSS is the proportional set size (KiB) of pid and its descendants.
func treePSS(pid int) int {
	total := 0
	for _, p := range procTree(pid) {
		f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", p))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
				n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
				total += n
			}
		}
		f.Close()
	}
	return total
}
