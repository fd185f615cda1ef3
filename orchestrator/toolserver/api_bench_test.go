package toolserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// BenchmarkSessionInfoRoundTrip measures one in-process tools.Call of
// session_info against a live Serve: file reads, endpoint validation, HTTP
// on loopback, authentication and the handler. It reports the median and
// 99th percentile latency besides ns/op.
func BenchmarkSessionInfoRoundTrip(b *testing.B) {
	tmux, dir := apiNewState(b)
	s := apiStart(b, tmux, dir)
	apiLaunch(b, s.op(), "cat")
	ctx := context.Background()
	req := tools.Request{Operation: "session_info"}
	// Warm the connection pool.
	if res := tools.Call(ctx, s.op(), req, tools.CallOptions{}); !res.OK {
		b.Fatalf("session_info: %s", apiRes(res))
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res := tools.Call(ctx, s.op(), req, tools.CallOptions{})
		lat = append(lat, time.Since(t0))
		if !res.OK {
			b.Fatalf("session_info: %s", apiRes(res))
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		i := int(p * float64(len(lat)-1))
		return float64(lat[i].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// BenchmarkProcessCall compares one `termsprawlctl call session_info`
// process (what a shell script or an agent's tool hook pays) with one
// `tmux display-message` process against the same private server: the
// target is termsprawlctl ≤ 1.5 × tmux. lean-probe is the same call from
// a throwaway binary that links only package tools (leanCallProbe).
func BenchmarkProcessCall(b *testing.B) {
	bin := buildCtl(b)
	lean := buildProbe(b, "leancall", leanCallProbe, "github.com/termsprawl/termsprawl v0.0.0")
	tmux, dir := apiNewState(b)
	s := apiStart(b, tmux, dir)
	apiLaunch(b, s.op(), "cat")
	var clean []string // no TMUX*, no TERMSPRAWL_*
	for _, kv := range tmuxtest.Env() {
		if !strings.HasPrefix(kv, "TERMSPRAWL_") {
			clean = append(clean, kv)
		}
	}
	run := func(b *testing.B, argv ...string) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = clean
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("%v: %v\n%s", argv, err, out)
		}
	}
	b.Run("termsprawlctl", func(b *testing.B) {
		argv := []string{bin, "--session", s.op(), "call", "session_info"}
		run(b, argv...)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			run(b, argv...)
		}
	})
	b.Run("lean-probe", func(b *testing.B) {
		argv := []string{lean, s.op()}
		run(b, argv...)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			run(b, argv...)
		}
	})
	b.Run("tmux", func(b *testing.B) {
		argv := []string{"tmux", "-L", tmux.Socket, "display-message", "-p", "x"}
		run(b, argv...)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			run(b, argv...)
		}
	})
}

// leanCallProbe is a throwaway client that links only package tools (no
// CLI framework, no MCP): one session_info call, the value on stdout. It
// shows what `termsprawlctl call` would cost without the packages it
// links for its other commands.
const leanCallProbe = `package main

import (
	"context"
	"os"

	"github.com/termsprawl/termsprawl/tools"
)

func main() {
	res := tools.Call(context.Background(), os.Args[1], tools.Request{Operation: "session_info"}, tools.CallOptions{})
	if !res.OK {
		os.Stderr.WriteString(res.Error + "\n")
		os.Exit(1)
	}
	os.Stdout.Write(append(res.Value, '\n'))
}
`

// buildCtl builds termsprawlctl into a temporary directory.
func buildCtl(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "termsprawlctl")
	build := exec.Command("go", "build", "-o", bin, "github.com/termsprawl/termsprawl/cmd/termsprawlctl")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build termsprawlctl: %v\n%s", err, out)
	}
	return bin
}

// buildProbe builds a throwaway main package (source main.go) in its own
// module in a temporary directory outside the repository. requires are
// "path version" lines copied into its go.mod; "github.com/termsprawl/termsprawl"
// is replaced by this working tree. The repository's go.sum is copied so
// the build works from the module cache alone.
func buildProbe(b *testing.B, name, main string, requires ...string) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		b.Fatal(err)
	}
	mod := "module probe/" + name + "\n\ngo 1.26\n"
	for _, r := range requires {
		mod += "\nrequire " + r + "\n"
	}
	mod += "\nreplace github.com/termsprawl/termsprawl => " + root + "\n"
	sum, err := os.ReadFile(filepath.Join("..", "..", "go.sum"))
	if err != nil {
		b.Fatal(err)
	}
	for f, data := range map[string][]byte{"go.mod": []byte(mod), "go.sum": sum, "main.go": []byte(main)} {
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	bin := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	if out, err := build.CombinedOutput(); err != nil {
		b.Skipf("build probe %s (needs the module cache): %v\n%s", name, err, out)
	}
	return bin
}

// goModVersion returns the version of module path required in the repository's go.mod.
func goModVersion(b *testing.B, path string) string {
	b.Helper()
	mod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(mod), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "require "))
		if len(f) >= 2 && f[0] == path {
			return f[1]
		}
	}
	b.Fatalf("%s is not in go.mod", path)
	return ""
}

// BenchmarkProcessFloor times processes that do no work, to show where
// the start-up time of `termsprawlctl call` goes: a hello-world Go binary
// (hello-go), a Go binary that only imports mcp-go's server package
// (mcp-import, what linking the MCP bridge costs at init), termsprawlctl
// failing on a session file that does not exist (ctl-nosession: its
// start-up without any I/O), and tmux failing to find a server
// (tmux-noserver: `tmux -L <unused> display -p x`). A non-zero exit is
// expected for the last two.
func BenchmarkProcessFloor(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Skip("tmux is not installed")
	}
	hello := buildProbe(b, "hello", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello, world\") }\n")
	mcp := buildProbe(b, "mcpimport", "package main\n\nimport _ \"github.com/mark3labs/mcp-go/server\"\n\nfunc main() {}\n",
		"github.com/mark3labs/mcp-go "+goModVersion(b, "github.com/mark3labs/mcp-go"))
	ctl := buildCtl(b)
	missing := filepath.Join(b.TempDir(), "no-such-operator.json")
	// A socket name no server uses: tmux connects, fails and exits 1. It
	// never starts a server (display-message does not), and it is not
	// the default server.
	unused := fmt.Sprintf("tsbench-noserver-%d", os.Getpid())
	env := tmuxtest.Env()
	run := func(b *testing.B, mayFail bool, argv ...string) {
		b.Helper()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		out, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !(mayFail && errors.As(err, &ee)) {
			b.Fatalf("%v: %v\n%s", argv, err, out)
		}
		if err == nil && mayFail {
			b.Fatalf("%v succeeded; the probe expects it to fail", argv)
		}
	}
	for _, c := range []struct {
		name    string
		mayFail bool
		argv    []string
	}{
		{"hello-go", false, []string{hello}},
		{"mcp-import", false, []string{mcp}},
		{"ctl-nosession", true, []string{ctl, "--session", missing, "call", "session_info"}},
		{"tmux-noserver", true, []string{"tmux", "-L", unused, "display-message", "-p", "x"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			run(b, c.mayFail, c.argv...)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run(b, c.mayFail, c.argv...)
			}
		})
	}
}
