package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// interruptCycles is how often TestE2EKillMidSubmitAndClose kills the
// orchestrator in the middle of a keyed submit and a keyed close.
const interruptCycles = 10

// A kill -9 between a submit's text and its Enter, and one in the middle
// of a close, are settled by the next `up`: the typed line is cleared, not
// glued to the next input nor submitted; the close is finished (its
// program ends); both keys answer their final outcome, never in_progress.
// The orchestrator stops at deterministic points (TERMSPRAWL_TEST_PAUSE_*,
// orchestrator/testpause_on.go, in a binary built with -tags
// termsprawl_testhooks), not by timing luck.
func TestE2EKillMidSubmitAndClose(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	e.ts = termsprawlWithTestHooks(t) // only it reads the pauses below
	e.env = append(e.env, "TERMSPRAWL_TEST_PAUSE_SUBMIT=PAUSEME", "TERMSPRAWL_TEST_PAUSE_CLOSE=pauseclose")
	dir := t.TempDir()
	logPath := filepath.Join(dir, "log")
	up, _ := e.up()
	sh := e.launchShell()
	_ = up

	call := func(op string, args map[string]any) (int, map[string]any, string) {
		b, _ := json.Marshal(args)
		code, out, errb := e.run(e.ctl, "--session", e.oper, "call", op, string(b))
		var env map[string]any
		json.Unmarshal([]byte(out), &env)
		return code, env, out + errb
	}
	background := func(op string, args map[string]any) {
		b, _ := json.Marshal(args)
		cmd := exec.Command(e.ctl, "--session", e.oper, "call", op, string(b))
		cmd.Env = e.env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go cmd.Wait()
	}
	waitFile := func(p string) {
		t.Helper()
		if !testenv.Until(30*time.Second, func() bool { _, err := os.Stat(p); return err == nil }) {
			t.Fatalf("%s never appeared", p)
		}
	}
	logLines := func() []string {
		b, _ := os.ReadFile(logPath)
		return strings.Fields(string(b))
	}
	waitLine := func(line string) {
		t.Helper()
		if !testenv.Until(20*time.Second, func() bool { return slices.Contains(logLines(), line) }) {
			t.Fatalf("%q never reached the log: %q", line, logLines())
		}
	}
	var want []string
	for cycle := range interruptCycles {
		for _, f := range []string{"test-paused-submit", "test-paused-close"} {
			os.Remove(filepath.Join(e.state, f))
		}
		// A keyed submit that completes: its repeat must not run again.
		onceKey := fmt.Sprintf("once-%d", cycle)
		onceArgs := map[string]any{"terminal": sh, "text": fmt.Sprintf("echo once-%d >> %s", cycle, logPath), "idempotency_key": onceKey}
		if code, env, out := call("terminal_submit", onceArgs); code != 0 || env["ok"] != true {
			t.Fatalf("cycle %d: submit: %s", cycle, out)
		}
		waitLine(fmt.Sprintf("once-%d", cycle))
		want = append(want, fmt.Sprintf("once-%d", cycle))

		// A node to close, its program's pid written where we can see it.
		pidFile := filepath.Join(dir, fmt.Sprintf("pid-%d", cycle))
		code, env, out := call("terminal_launch", map[string]any{"command": []string{"sh", "-c", "echo $$ > " + pidFile + "; exec sleep 1000"}, "name": fmt.Sprintf("pauseclose-%d", cycle)})
		if code != 0 || env["ok"] != true {
			t.Fatalf("cycle %d: launch: %s", cycle, out)
		}
		closing := env["value"].(map[string]any)["result"].(map[string]any)["terminal"].(string)
		waitFile(pidFile)

		// The submit stops between its text and its Enter, the close
		// between detaching and the hang-up; then the orchestrator dies.
		subKey, closeKey := fmt.Sprintf("sub-%d", cycle), fmt.Sprintf("close-%d", cycle)
		subArgs := map[string]any{"terminal": sh, "text": fmt.Sprintf("echo PAUSEME-%d >> %s", cycle, logPath), "idempotency_key": subKey}
		closeArgs := map[string]any{"terminal": closing, "idempotency_key": closeKey}
		background("terminal_submit", subArgs)
		waitFile(filepath.Join(e.state, "test-paused-submit"))
		background("terminal_close", closeArgs)
		waitFile(filepath.Join(e.state, "test-paused-close"))
		if err := up.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if !up.waitExit(15 * time.Second) {
			t.Fatal("termsprawl up survived SIGKILL")
		}
		var upErr *syncBuffer
		up, upErr = e.up()
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("cycle %d: up's log:\n%s", cycle, upErr.String())
			}
		})

		// The next, unrelated submit runs alone: nothing glued to it.
		next := fmt.Sprintf("next-%d", cycle)
		if code, env, out := call("terminal_submit", map[string]any{"terminal": sh, "text": fmt.Sprintf("echo %s >> %s", next, logPath)}); code != 0 || env["ok"] != true {
			t.Fatalf("cycle %d: next submit: %s", cycle, out)
		}
		waitLine(next)
		want = append(want, next)
		if got := logLines(); !slices.Equal(got, want) {
			t.Fatalf("cycle %d: glued or repeated lines ran:\n got %q\nwant %q", cycle, got, want)
		}

		// Keys answer their final outcome.
		if _, env, out := call("terminal_submit", onceArgs); env["ok"] != true {
			t.Fatalf("cycle %d: repeat of a completed submit: %s", cycle, out)
		}
		_, env, out = call("terminal_submit", subArgs)
		if env["ok"] == true || strings.Contains(out, string(tools.KindInProgress)) || !strings.Contains(out, "cleared") {
			t.Fatalf("cycle %d: repeat of the interrupted submit's key: want its final outcome (cleared, not run), got %s", cycle, out)
		}
		_, env, out = call("terminal_close", closeArgs)
		if env["ok"] != true || env["value"].(map[string]any)["result"].(map[string]any)["closed"] != true {
			t.Fatalf("cycle %d: repeat of the interrupted close's key: want its receipt, got %s", cycle, out)
		}
		// The closed node's program is gone, and the node too.
		b, _ := os.ReadFile(pidFile)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid <= 0 {
			t.Fatalf("cycle %d: pid file %q", cycle, b)
		}
		if alive(pid, 2*time.Second) {
			t.Fatalf("cycle %d: the closed node's program (pid %d) still runs", cycle, pid)
		}
		var l tools.NodeList
		if err := json.Unmarshal([]byte(e.must(e.ts, "ls", "--json")), &l); err != nil {
			t.Fatal(err)
		}
		for _, n := range l.Terminals {
			if n.Terminal == closing {
				t.Fatalf("cycle %d: closed node %s still listed", cycle, closing)
			}
		}
	}
	// Every line ran exactly once, nothing else ran, nothing glued.
	if got := logLines(); !slices.Equal(got, want) {
		t.Fatalf("log:\n got %q\nwant %q", got, want)
	}
	entries, _ := os.ReadDir(dir)
	for _, en := range entries {
		if n := en.Name(); n != "log" && !strings.HasPrefix(n, "pid-") {
			t.Fatalf("a stray file %s: a glued line ran", n)
		}
	}
	e.down(up)
}

// alive reports whether pid still runs (not a zombie its parent has yet
// to reap) after up to d.
func alive(pid int, d time.Duration) bool {
	gone := func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		_, rest, ok := strings.Cut(string(stat), ") ")
		return ok && strings.HasPrefix(rest, "Z")
	}
	return !testenv.Until(d, gone)
}
