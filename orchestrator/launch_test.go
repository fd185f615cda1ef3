package orchestrator

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/node"
	"github.com/termsprawl/termsprawl/tools"
)

// A program that cannot start is refused before a node exists, with a
// message that names it.
func TestLaunchRefusesProgramsThatCannotStart(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	dir := t.TempDir()
	plain := filepath.Join(dir, "not-executable")
	os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o600)
	for _, argv := range [][]string{
		{"no-such-program-termsprawl"},
		{"no-such-program-termsprawl", "--flag"},
		{filepath.Join(dir, "missing")},
		{plain},
		{dir},
	} {
		_, err := o.Launch(tctx(t), LaunchSpec{Command: argv, Cwd: dir})
		if tools.KindOf(err) != tools.KindUsage || !strings.Contains(err.Error(), argv[0]) {
			t.Errorf("launch %q: %v, want a usage error naming the program", argv, err)
		}
	}
	if n := len(o.Nodes()); n != 0 {
		t.Fatalf("%d nodes exist after refused launches", n)
	}
	if files, _ := filepath.Glob(filepath.Join(o.StateDir(), nodesDir, "*")); len(files) != 0 {
		t.Fatalf("node files left: %v", files)
	}
	if _, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"cat"}, Cwd: filepath.Join(dir, "gone")}); tools.KindOf(err) != tools.KindUsage {
		t.Fatalf("missing cwd: %v", err)
	}
}

// A program that exits right after its launch makes the launch say so; one
// that starts and waits does not.
func TestLaunchReportsAnEarlyExit(t *testing.T) {
	t.Parallel()
	o := openWatching(t, DefaultLaunchWatch)
	info, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"sh", "-c", "echo cannot open config; sleep 0.1; exit 3"}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if info.Exited == nil || info.Exited.ExitCode != 3 || !strings.Contains(strings.Join(info.Exited.ScreenTail, "\n"), "cannot open config") {
		t.Fatalf("early exit not reported: %+v", info.Exited)
	}
	info, err = o.Launch(tctx(t), LaunchSpec{Command: []string{"sh", "-c", "echo ready; exec cat"}, Cwd: t.TempDir()})
	if err != nil || info.Exited != nil {
		t.Fatalf("a program that started: %+v %v", info.Exited, err)
	}
}

// A program that printed and ended is reported although its exit reached
// the node only after the launch's quiet period (as under load): the
// hooks hold the exit back until that period ran out.
func TestLaunchReportsAnExitLateToTheNode(t *testing.T) {
	t.Parallel()
	o := openWatching(t, DefaultLaunchWatch)
	quietRanOut := make(chan struct{})
	var once sync.Once
	o.hooks.LaunchQuiet = func(_ *node.Node, a hosts.Activity) {
		if a == hosts.ActivityEnded {
			once.Do(func() { close(quietRanOut) })
		}
	}
	o.hooks.Exiting = func(*node.Node) {
		select {
		case <-quietRanOut:
		case <-time.After(5 * time.Second): // the launch returned without looking
		}
	}
	info, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"sh", "-c", "echo cannot open config; sleep 0.1; exit 3"}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if info.Exited == nil || info.Exited.ExitCode != 3 || !strings.Contains(strings.Join(info.Exited.ScreenTail, "\n"), "cannot open config") {
		t.Fatalf("an exit late to the node was not reported: %+v", info.Exited)
	}
}

// A program that printed and then waits for its own sleep before exiting
// is watched past the quiet period (it is busy, not waiting for input)
// and its exit reported; one that printed and waits for input is
// reported as started at the first quiet period that finds it so. The
// watch here is long, so that a loaded machine cannot end it first.
func TestLaunchWatchesABusyProgramPastTheQuiet(t *testing.T) {
	t.Parallel()
	o := openWatching(t, 30*time.Second)
	var mu sync.Mutex
	seen := map[string][]hosts.Activity{}
	o.hooks.LaunchQuiet = func(n *node.Node, a hosts.Activity) {
		mu.Lock()
		defer mu.Unlock()
		seen[n.Meta.ID] = append(seen[n.Meta.ID], a)
	}
	info, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"sh", "-c", "echo cannot open config; sleep 0.6; exit 4"}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if info.Exited == nil || info.Exited.ExitCode != 4 || !strings.Contains(strings.Join(info.Exited.ScreenTail, "\n"), "cannot open config") {
		t.Fatalf("a program that exited after a pause was reported as started: %+v", info.Exited)
	}
	mu.Lock()
	looks := seen[info.Terminal]
	mu.Unlock()
	if len(looks) == 0 || looks[0] != hosts.ActivityBusy {
		t.Fatalf("the quiet period's looks: %v, want busy first", looks)
	}

	info, err = o.Launch(tctx(t), LaunchSpec{Command: []string{"sh", "-c", "echo ready; cat; echo after"}, Cwd: t.TempDir()})
	if err != nil || info.Exited != nil {
		t.Fatalf("a program waiting for input: %+v %v", info.Exited, err)
	}
	mu.Lock()
	looks = seen[info.Terminal]
	mu.Unlock()
	if len(looks) == 0 || looks[len(looks)-1] != hosts.ActivityWaiting {
		t.Fatalf("the quiet period's looks: %v, want waiting last", looks)
	}
}

// Every node finds termsprawlctl on its PATH, first.
func TestNodesHaveTheCtlOnPath(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	ctl := filepath.Join(bin, "termsprawlctl")
	if err := os.WriteFile(ctl, []byte("#!/bin/sh\necho fake-ctl\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.CtlPath = ctl })
	for _, mode := range []string{"replace", "inherit"} {
		info, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"sh", "-c", `echo "P=$PATH"; termsprawlctl; exec cat`}, Cwd: t.TempDir(), EnvMode: mode})
		if err != nil {
			t.Fatal(err)
		}
		waitText(t, o, info.Terminal, "fake-ctl")
		snap, _ := o.Snapshot(context.Background(), info.Terminal)
		if !strings.Contains(strings.Join(snap.Lines, "\n"), "P="+bin+string(filepath.ListSeparator)) {
			t.Fatalf("env_mode %s: PATH does not start with %s:\n%s", mode, bin, strings.Join(snap.Lines, "\n"))
		}
	}
	if _, err := os.Stat(ctl); errors.Is(err, os.ErrNotExist) {
		t.Fatal("ctl vanished")
	}
}

// A node's token is announced (OnBorn) once its session file is written
// and before its program exists, so the tool server knows the token by
// the time the program can call.
func TestOnBornBeforeTheProgramStarts(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	type seen struct {
		id              string
		sessionFile     bool
		sessionExisting bool
	}
	born := make(chan seen, 4)
	o.OnBorn(func(m NodeMeta) {
		_, err := tools.ReadSession(tools.SessionPath(o.cfg.StateDir, m.ID))
		has := exec.Command("tmux", "-L", srv.Socket, "has-session", "-t", "=ts-"+m.ID).Run() == nil
		born <- seen{m.ID, err == nil, has}
	})
	gone := make(chan string, 4)
	o.OnGone(func(m NodeMeta) { gone <- m.ID })
	id := launch(t, o, "sleep", "60")
	b := <-born
	if b.id != id || !b.sessionFile || b.sessionExisting {
		t.Fatalf("OnBorn saw %+v: want node %s with its session file and no tmux session yet", b, id)
	}
	select {
	case g := <-gone:
		t.Fatalf("OnGone for %s during a good launch", g)
	default:
	}
}
