package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

func wantKind(t *testing.T, err error, kind tools.Kind, contains string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want kind %s", kind)
	}
	if k := tools.KindOf(err); k != kind {
		t.Fatalf("error %q has kind %s, want %s", err, k, kind)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Fatalf("error %q does not mention %q", err, contains)
	}
}

func TestBadLaunches(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	ctx := tctx(t)
	_, err := o.Launch(ctx, LaunchSpec{Command: []string{"true"}, Cwd: "/does/not/exist"})
	wantKind(t, err, tools.KindUsage, "/does/not/exist")
	_, err = o.Launch(ctx, LaunchSpec{Command: []string{"true"}, Columns: 20000, Rows: 20000})
	wantKind(t, err, tools.KindUsage, "out of range")
	_, err = o.Launch(ctx, LaunchSpec{Command: []string{"true"}, Columns: 1, Rows: 1})
	wantKind(t, err, tools.KindUsage, "out of range")
	_, err = o.Launch(ctx, LaunchSpec{Command: []string{"true"}, Cwd: "relative"})
	wantKind(t, err, tools.KindUsage, "absolute")
	_, err = o.Launch(ctx, LaunchSpec{Command: []string{"true"}, Env: map[string]string{"BAD NAME": "x"}})
	wantKind(t, err, tools.KindUsage, "BAD NAME")
	if got := len(o.List(ctx)); got != 0 {
		t.Fatalf("failed launches left %d nodes", got)
	}
	files, _ := filepath.Glob(filepath.Join(o.StateDir(), "sessions", "*.json"))
	if len(files) != 0 {
		t.Fatalf("failed launches left session files %v", files)
	}
}

func TestUnknownTerminal(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	ctx := tctx(t)
	_, err := o.Snapshot(context.Background(), "nope")
	wantKind(t, err, tools.KindNotFound, `"nope"`)
	_, err = o.Type(ctx, "nope", "x", nil)
	wantKind(t, err, tools.KindNotFound, `"nope"`)
	_, err = o.WaitFor(ctx, "nope", tools.WaitSpec{Wait: tools.WaitRender})
	wantKind(t, err, tools.KindNotFound, `"nope"`)
	wantKind(t, o.CloseNode(ctx, "nope"), tools.KindNotFound, `"nope"`)
}

func TestProgramExitsAtOnce(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	// 0.1 s between the output and the exit: tmux 3.3a itself can drop
	// the output of a program that exits as our control client attaches
	// (docs/TMUX-CRASHES.md); this test is about what we report.
	id := launch(t, o, "sh", "-c", "echo bye; sleep 0.1; exit 7")
	r, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if r.ExitCode == nil || *r.ExitCode != 7 || r.Status != tools.StatusExited {
		t.Fatalf("exit wait = %+v (code %v)", r, derefInt(r.ExitCode))
	}
	waitText(t, o, id, "bye")
	_, err = o.Type(tctx(t), id, "x", nil)
	wantKind(t, err, tools.KindNotRun, "exited")
	list := o.List(tctx(t))
	if len(list) != 1 || list[0].Status != tools.StatusExited || *list[0].ExitCode != 7 {
		t.Fatalf("list = %+v", list)
	}
}

// TestArgvVerbatim: quotes, ';', '$', newlines and non-ASCII reach the
// program as they are, with no shell in between.
func TestArgvVerbatim(t *testing.T) {
	t.Parallel()
	need(t, "python3")
	o, _ := newTestOrchestrator(t)
	out := filepath.Join(t.TempDir(), "args")
	args := []string{`it's "quoted"`, "a;b", "$HOME", "line1\nline2", "héllo ✓", "", "~", "#{pane_id}"}
	script := writeScript(t, "dump.py", "import sys, json\nopen(sys.argv[1], 'w').write(json.dumps(sys.argv[2:]))\n")
	id := launch(t, o, append([]string{"python3", script, out}, args...)...)
	if _, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 10000}); err != nil {
		snap, _ := o.Snapshot(context.Background(), id)
		t.Fatalf("%v\n%s", err, strings.Join(snap.Lines, "\n"))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := `["it's \"quoted\"", "a;b", "$HOME", "line1\nline2", "h\u00e9llo \u2713", "", "~", "#{pane_id}"]`
	if string(b) != want {
		t.Fatalf("program got %s\nwant %s", b, want)
	}
	// A single argument is not handed to a shell either: it names a
	// program that does not exist, refused before anything runs.
	if _, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"/bin/echo;true"}, Cwd: t.TempDir()}); tools.KindOf(err) != tools.KindUsage || !strings.Contains(err.Error(), "/bin/echo;true") {
		t.Fatalf("a one-word argv with ';': %v", err)
	}
}

func TestEnvModes(t *testing.T) {
	o, _ := newTestOrchestrator(t)
	os.Setenv("TS_TEST_SECRET_PARENT", "leak")
	defer os.Unsetenv("TS_TEST_SECRET_PARENT")
	dir := t.TempDir()
	dump := func(mode string) map[string]string {
		out := filepath.Join(dir, mode)
		info, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"sh", "-c", "env > " + out}, EnvMode: mode,
			Env: map[string]string{"MY_VAR": "v1"}, Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.WaitFor(tctx(t), info.Terminal, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 10000}); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(out)
		env := map[string]string{}
		for _, l := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(l, "=")
			env[k] = v
		}
		if env["TERMSPRAWL_SESSION_FILE"] != tools.SessionPath(o.StateDir(), info.Terminal) {
			t.Errorf("%s: TERMSPRAWL_SESSION_FILE = %q", mode, env["TERMSPRAWL_SESSION_FILE"])
		}
		if _, err := tools.ReadSession(env["TERMSPRAWL_SESSION_FILE"]); err != nil {
			t.Errorf("%s: the session file is not valid for the program: %v", mode, err)
		}
		if env["MY_VAR"] != "v1" {
			t.Errorf("%s: MY_VAR = %q", mode, env["MY_VAR"])
		}
		return env
	}
	if env := dump("replace"); env["TS_TEST_SECRET_PARENT"] != "" {
		t.Errorf("replace mode leaked the orchestrator's environment")
	}
	if env := dump("inherit"); env["TS_TEST_SECRET_PARENT"] != "leak" {
		t.Errorf("inherit mode did not pass the orchestrator's environment")
	}
}

func TestBadWaitsAndKeys(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, "cat")
	ctx := tctx(t)
	_, err := o.WaitFor(ctx, id, tools.WaitSpec{Wait: tools.WaitRegex, Pattern: "(unclosed"})
	wantKind(t, err, tools.KindUsage, "does not compile")
	_, err = o.WaitFor(ctx, id, tools.WaitSpec{Wait: tools.WaitText})
	wantKind(t, err, tools.KindUsage, "text")
	_, err = o.Press(ctx, id, "Enter Bogus", nil)
	wantKind(t, err, tools.KindUsage, `"Bogus"`)
	future := uint64(1 << 40)
	_, err = o.WaitFor(ctx, id, tools.WaitSpec{Wait: tools.WaitRender, After: &future})
	wantKind(t, err, tools.KindUsage, "newer")
	r, err := o.WaitFor(ctx, id, tools.WaitSpec{Wait: tools.WaitText, Text: "never", TimeoutMS: 300})
	wantKind(t, err, tools.KindTimeout, "timed out")
	if !r.TimedOut {
		t.Fatalf("timeout result = %+v", r)
	}
	_, err = o.CaptureSince(context.Background(), id, future)
	wantKind(t, err, tools.KindUsage, "cursor")
}

func TestHostilePrograms(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	// Queries (DA, DSR, DECRQM, OSC 11), an oversized scroll region and
	// scrolling in it, then a marker: the mirror must survive all of it.
	id := launch(t, o, "sh", "-c", `printf '\033[c\033[6n\033[?2004$p\033]11;?\007'; printf '\033[1;500r\033[S\033[r'; printf 'wide 漢字 at edge\n'; printf 'SURVIVED\n'; sleep 30`)
	waitText(t, o, id, "SURVIVED")
	requireSameAsTmux(t, o, srv, id, "after queries and a bad scroll region")
	// A flooding program (yes) does not wedge anything.
	yes := launch(t, o, "yes", "flood")
	r, err := o.WaitFor(tctx(t), yes, tools.WaitSpec{Wait: tools.WaitRender, TimeoutMS: 10000})
	if err != nil || !r.Matched {
		t.Fatalf("render wait on a flood: %+v %v", r, err)
	}
	if _, err := o.Interrupt(tctx(t), yes, &tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 10000}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Snapshot(context.Background(), yes); err != nil {
		t.Fatal(err)
	}
}

func TestTmuxServerKilledUnderLiveNode(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	id := launch(t, o, "sleep", "60")
	pid, _ := strconv.Atoi(strings.TrimSpace(srv.Must("display-message", "-p", "#{pid}")))
	done := make(chan tools.WaitResult, 1)
	go func() {
		r, _ := o.WaitFor(context.Background(), id, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 20000})
		done <- r
	}()
	n := o.node(id)
	testenv.Eventually(t, 10*time.Second, func() bool { return n.Observers.Load() > 0 }, testenv.Msg("the exit wait never registered"))
	syscall.Kill(pid, syscall.SIGKILL)
	select {
	case r := <-done:
		if r.Status != tools.StatusLost || !r.Matched {
			t.Fatalf("exit wait after server death = %+v", r)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("a wait on a node of a killed tmux server never returned")
	}
	// The death is loud: counted, and the node is listed lost (CONTRACT
	// §26) with the reason instead of vanishing.
	if deaths, last := o.ServerHealth(); deaths != 1 || last == "" {
		t.Fatalf("server deaths %d (%q), want 1", deaths, last)
	}
	snap, err := o.Snapshot(context.Background(), id)
	if err != nil || snap.Status != tools.StatusLost || !strings.Contains(snap.ExitReason, "termsprawl restore "+id) {
		t.Fatalf("the lost node: %+v, %v", snap, err)
	}
	if _, err := o.Type(tctx(t), id, "x", nil); err == nil {
		t.Fatal("typing into a node of a dead server succeeded")
	}
	// The orchestrator starts a new server for the next launch and keeps
	// serving; closing the lost node forgets it.
	id2 := launch(t, o, "sh", "-c", "echo reborn; sleep 30")
	waitText(t, o, id2, "reborn")
	if err := o.CloseNode(tctx(t), id); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Snapshot(context.Background(), id); tools.KindOf(err) != tools.KindNotFound {
		t.Fatalf("the lost node after close: %v", err)
	}
	if deaths, _ := o.ServerHealth(); deaths != 1 {
		t.Fatalf("one death counted %d times", deaths)
	}
}

func TestRestartAdoptsAndReseeds(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	dir := o.StateDir()
	marker := filepath.Join(t.TempDir(), "go")
	id := launch(t, o, "sh", "-c", "echo before; while [ ! -e "+marker+" ]; do sleep 0.05; done; echo printed-while-down; touch "+marker+".done; exec cat")
	waitText(t, o, id, "before")
	sess, err := tools.ReadSession(tools.SessionPath(dir, id))
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	if n := len(controlClients(srv.Socket)); n != 0 {
		t.Fatalf("%d tmux -C clients left after Close", n)
	}
	os.WriteFile(marker, nil, 0o600)
	// The program prints while nobody watches.
	testenv.Eventually(t, 10*time.Second, func() bool { _, err := os.Stat(marker + ".done"); return err == nil }, testenv.Msg("the program never printed"))
	o2 := openOrchestrator(t, srv, dir)
	waitText(t, o2, id, "printed-while-down")
	sess2, err := tools.ReadSession(tools.SessionPath(dir, id))
	if err != nil || sess2.Token != sess.Token {
		t.Fatalf("token did not survive the restart: %v", err)
	}
	if _, err := o2.Submit(tctx(t), id, "after-restart", &tools.WaitSpec{Wait: tools.WaitText, Text: "after-restart", TimeoutMS: 10000}); err != nil {
		t.Fatal(err)
	}
	requireSameAsTmux(t, o2, srv, id, "adopted node")
	// Closing removes the session and the node's files.
	if err := o2.CloseNode(tctx(t), id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tools.SessionPath(dir, id)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("session file still there after close: %v", err)
	}
	if _, err := srv.Cmd("has-session", "-t", "=ts-"+id); err == nil {
		t.Fatal("tmux session still there after close")
	}
}
