package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// TestScripts runs cli/testdata/script/*.txtar: the README's first five
// minutes and the bad inputs, as a user types them, against the real
// binaries (built once in TestMain) on a private tmux server and a
// private state directory per script. Run one with
//
//	go test ./cli -run TestScripts/human
//
// Each script gets:
//
//	PATH                   $WORK/bin, then the built termsprawl and termsprawlctl, then the PATH of go test
//	TERMSPRAWL_HOME        $WORK/state
//	TERMSPRAWL_TMUX_SOCKET a fresh socket, whose server is killed at the end
//	HOME                   $WORK/home, with a go env file pointing at the real build and module caches
//	TERMSPRAWL_REPO        the root of this checkout (for `go run` as the README has it)
//
// and the commands
//
//	exits N PROG ARGS...   run PROG; its exit code must be N (stdout and stderr are kept for stdout/stderr)
//	jsonvar VAR PATH       set $VAR to the value at PATH (dot-separated keys, like value.result.revision) of the last stdout
//	serving                wait (at most 60 s) until an orchestrator of $TERMSPRAWL_HOME serves
//	waitfile FILE          wait (at most 20 s) until FILE exists
//	othertmux VAR          set $VAR to the socket name of another private tmux server, killed at the end
//
// Whatever a script leaves running is stopped at its end (termsprawl down
// --all, then the tmux server is killed).
func TestScripts(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "end-to-end scripts")
	testenv.LookPath(t, "tmux", "apt-get install tmux") // skips, or fails in CI
	if e2eBuildErr != nil {
		t.Fatal(e2eBuildErr)
	}
	if e2eBinDir == "" {
		testenv.SkipOrFail(t, "binaries were not built")
	}
	goEnv := goEnvFile(t)
	repoRoot, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			tb, ok := env.T().(testing.TB)
			if !ok {
				return fmt.Errorf("testscript's T is not a testing.TB")
			}
			srv := tmuxtest.New(tb) // its server is killed after the script's defers
			env.Values[tbKey{}] = tb
			work := env.WorkDir
			state := filepath.Join(work, "state")
			home := filepath.Join(work, "home")
			if err := os.MkdirAll(filepath.Join(home, ".config", "go"), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(home, ".config", "go", "env"), []byte(goEnv), 0o644); err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Join(work, "bin"), 0o755); err != nil {
				return err
			}
			env.Setenv("PATH", filepath.Join(work, "bin")+string(os.PathListSeparator)+e2eBinDir+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("TERMSPRAWL_HOME", state)
			env.Setenv("TERMSPRAWL_TEST_BIN", e2eBinDir) // for scripts that narrow PATH
			env.Setenv("TERMSPRAWL_REPO", repoRoot)      // for scripts that run the README from the checkout
			env.Setenv("TERMSPRAWL_TMUX_SOCKET", srv.Socket)
			env.Setenv("HOME", home)
			env.Setenv("USER", os.Getenv("USER"))
			env.Setenv("LANG", "C.UTF-8")
			env.Setenv("TERM", "xterm-256color")
			vars := append([]string(nil), env.Vars...)
			env.Defer(func() { stopEverything(tb, vars, state, srv.Socket) })
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":    cmdExits,
			"jsonvar":  cmdJSONVar,
			"serving":  cmdServing,
			"waitfile": cmdWaitFile,
			"othertmux": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 1 {
					ts.Fatalf("usage: othertmux VAR")
				}
				tb, _ := ts.Value(tbKey{}).(testing.TB)
				if tb == nil {
					ts.Fatalf("othertmux: no test")
				}
				ts.Setenv(args[0], tmuxtest.New(tb).Socket)
			},
		},
	})
}

// tbKey is the testscript value holding the script's testing.TB.
type tbKey struct{}

// goEnvFile is a go env file ($HOME/.config/go/env) that makes a node's
// `go test` use this machine's caches and toolchain, offline: nodes get a
// minimal environment, so the variables of go test itself do not reach
// them.
func goEnvFile(t *testing.T) string {
	var b strings.Builder
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", k, err)
		}
		fmt.Fprintf(&b, "%s=%s\n", k, strings.TrimSpace(string(out)))
	}
	b.WriteString("GOPROXY=off\nGOTOOLCHAIN=local\nGOFLAGS=-buildvcs=false\n")
	return b.String()
}

// stopEverything ends what a script left running: termsprawl down --all,
// then, if the orchestrator is still there, SIGKILL.
func stopEverything(t testing.TB, env []string, state, socket string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(e2eBinDir, "termsprawl"), "down", "--all")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("cleanup: termsprawl down --all: %v\n%s", err, out)
	}
	if li, err := readLock(state); err == nil && pidAlive(li.PID) && looksLikeTermsprawl(state, li.PID) {
		_ = syscall.Kill(li.PID, syscall.SIGKILL)
	}
	if pids := tmuxtest.ControlClients(socket); len(pids) > 0 {
		t.Logf("cleanup: tmux control clients left on %s: %v", socket, pids)
	}
}

// cmdExits: exits N PROG ARGS...
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// cmdJSONVar: jsonvar VAR PATH
func cmdJSONVar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jsonvar VAR PATH")
	}
	var v any
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &v); err != nil {
		ts.Fatalf("jsonvar: stdout is not JSON: %v", err)
	}
	for _, k := range strings.Split(args[1], ".") {
		m, ok := v.(map[string]any)
		if !ok {
			ts.Fatalf("jsonvar: %s: %q is not in an object", args[1], k)
		}
		if v, ok = m[k]; !ok {
			ts.Fatalf("jsonvar: %s: no key %q", args[1], k)
		}
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		data, _ := json.Marshal(x)
		s = string(data)
	}
	ts.Setenv(args[0], s)
}

// cmdServing: serving — wait for endpoint.json of a live orchestrator
// (fsnotify, through tools.WaitForEndpoint), then for its operator
// session.
func cmdServing(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: serving")
	}
	state := ts.Getenv("TERMSPRAWL_HOME")
	if err := os.MkdirAll(state, 0o700); err != nil {
		ts.Fatalf("serving: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := tools.WaitForEndpoint(ctx, tools.EndpointPath(state), func(ep tools.Endpoint) bool { return pidAlive(ep.PID) }); err != nil {
		ts.Fatalf("serving: no orchestrator served within 60 s: %v", err)
	}
	res := tools.Call(ctx, tools.OperatorSessionPath(state), tools.Request{Operation: "session_info"}, tools.CallOptions{Wait: 30 * time.Second})
	if !res.OK {
		ts.Fatalf("serving: session_info: %s", res.Error)
	}
}

// cmdWaitFile: waitfile FILE
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	path := ts.MkAbs(args[0])
	if _, err := os.Stat(path); err == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := tools.WatchFiles(ctx, []string{path}, func(string) { cancel() })
	if _, serr := os.Stat(path); serr == nil {
		return
	}
	ts.Fatalf("waitfile: %s did not appear within 20 s (%v)", args[0], err)
}
