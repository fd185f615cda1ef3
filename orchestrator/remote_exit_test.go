package orchestrator

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/sshtest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// A remote program that exits 7, and one killed by a signal: the exit is
// read on the host (tmux's pane-died hook there, the host's /proc), and
// the crash report is as complete as a local one: code or signal, when,
// the last input, the screen's tail.
func TestRemoteExitCrash(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 8 s on a loaded 2-core machine")
	t.Parallel()
	o, _, _, _ := newRemote(t, "big="+sshtest.Good)
	for _, tc := range []struct {
		name, script string
		code         int
		signal       string
	}{
		{"exit7", `echo ready; read x; echo about to fail; exit 7`, 7, ""},
		{"segv", `echo ready; read x; echo about to crash; kill -SEGV $$`, 128 + 11, "SIGSEGV"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := remoteLaunch(t, o, "big", "sh", "-c", tc.script)
			waitText(t, o, id, "ready")
			if _, err := o.Submit(tctx(t), id, "go", nil); err != nil {
				t.Fatal(err)
			}
			res, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 20000})
			if err != nil || !res.Matched {
				t.Fatalf("wait for the exit: %+v %v", res, err)
			}
			snap, err := o.Snapshot(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Status != tools.StatusExited || snap.ExitCode == nil || *snap.ExitCode != tc.code {
				t.Fatalf("status %s, exit code %v, want exited %d", snap.Status, snap.ExitCode, tc.code)
			}
			c := snap.Crash
			if c == nil {
				t.Fatal("no crash report")
			}
			if tc.signal != "" && c.Signal != tc.signal {
				t.Fatalf("crash signal %q, want %s: %+v", c.Signal, tc.signal, c)
			}
			if tc.signal == "" && (c.ExitCode == nil || *c.ExitCode != tc.code) {
				t.Fatalf("crash exit code %v, want %d", c.ExitCode, tc.code)
			}
			if c.AfterMS <= 0 || c.LastInput == nil || c.LastInput.Kind != "text" || !strings.Contains(c.LastInput.Summary, `"go"`) {
				t.Fatalf("crash report: %+v (last input %+v)", c, c.LastInput)
			}
			if !slices.ContainsFunc(c.ScreenTail, func(l string) bool { return strings.Contains(l, "about to") }) {
				t.Fatalf("screen tail lacks the last output: %q", c.ScreenTail)
			}
			if l := o.List(tctx(t)); !slices.ContainsFunc(l, func(n tools.NodeInfo) bool { return n.Terminal == id && n.Crash != nil }) {
				t.Fatalf("terminal_list lacks the crash: %+v", l)
			}
		})
	}
}
