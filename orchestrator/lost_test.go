package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// keepNow runs one round of the screen keeper (the goroutine does the
// same every Config.KeepScreens).
func keepNow(o *Orchestrator) { o.keepOnce(map[*node.Node]kept{}) }

func kindOf(err error) tools.Kind {
	var e *tools.Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// A reboot as tmux sees it: every tmux server (two shards and a third)
// is killed while termsprawl is down. The next start lists every node as
// lost with its last screen (one that had exited stays exited); bad
// restores are refused and change nothing; restores bring back the same
// ids, names, directories and recording (with a gap); the next start
// adopts them and restores nothing twice.
func TestRebootLostNodesAndRestore(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 7 s on a loaded 2-core machine")
	t.Parallel()
	srv := tmuxtest.New(t) // its cleanup also ends the SOCKET-N shards
	state := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(state); err != nil {
		t.Fatal(err)
	}
	cfg := func(c *Config) { c.ShardSize = 2; c.KeepScreens = -1 } // rounds run by keepNow
	o := openOrchestratorWith(t, srv, state, cfg)
	dirs := map[string]string{}
	start := func(name string, record bool, argv ...string) string {
		t.Helper()
		dir := t.TempDir()
		info, err := o.Launch(tctx(t), LaunchSpec{Command: argv, Name: name, Cwd: dir, Columns: 80, Rows: 24, Record: record,
			Env: map[string]string{"REBOOT_VAR": "kept-" + name}})
		if err != nil {
			t.Fatal(err)
		}
		dirs[info.Terminal] = dir
		return info.Terminal
	}
	script := filepath.Join(t.TempDir(), "prog.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hello-e\nexec cat\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	show := `echo hello-$REBOOT_VAR in $(pwd); exec cat`
	a := start("a", false, "sh", "-c", show)
	b := start("b", false, "sh", "-c", show)
	c := start("c", true, "sh", "-c", show)
	d := start("d", false, "sh", "-c", "echo done-d; exit 3")
	e := start("e", false, script)
	for _, id := range []string{a, b, c} {
		waitText(t, o, id, "hello-kept-"+id)
	}
	waitText(t, o, e, "hello-e")
	if _, err := o.WaitFor(tctx(t), d, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 20000}); err != nil {
		t.Fatal(err)
	}
	recDir := nodeInfo(t, o, c).Recording.Path
	sockets := map[string]bool{}
	for _, n := range o.List(tctx(t)) {
		sockets[n.TmuxSocket] = true
	}
	if len(sockets) < 2 {
		t.Fatalf("nodes on %d servers, want shards", len(sockets))
	}
	keepNow(o)
	o.Close()
	for s := range sockets {
		if _, err := (&tmuxtest.Server{Socket: s}).Cmd("kill-server"); err != nil {
			t.Fatal(err)
		}
	}

	o2 := openOrchestratorWith(t, srv, state, cfg)
	status := map[string]string{}
	for _, n := range o2.List(tctx(t)) {
		status[n.Terminal] = n.Status
	}
	want := map[string]string{a: tools.StatusLost, b: tools.StatusLost, c: tools.StatusLost, d: tools.StatusExited, e: tools.StatusLost}
	for id, st := range want {
		if status[id] != st {
			t.Errorf("after the reboot %s is %q, want %q (all: %v)", id, status[id], st, status)
		}
	}
	for _, id := range []string{a, b, c} {
		snap, err := o2.Snapshot(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(snap.Lines, "\n"), "hello-kept-"+id) || snap.SavedAt == "" || snap.Status != tools.StatusLost {
			t.Fatalf("lost %s's snapshot: status %s saved %q\n%s", id, snap.Status, snap.SavedAt, strings.Join(snap.Lines, "\n"))
		}
		if _, err := os.Stat(tools.SessionPath(state, id)); !os.IsNotExist(err) {
			t.Errorf("lost %s keeps its session file (its token): %v", id, err)
		}
	}
	if _, err := o2.Submit(tctx(t), a, "x", nil); kindOf(err) != tools.KindConflict || !strings.Contains(err.Error(), "lost") {
		t.Errorf("input to a lost node: %v", err)
	}
	if id, err := o2.Resolve("b"); err != nil || id != b {
		t.Errorf("resolve a lost node's name: %q %v", id, err)
	}

	// Bad restores: each refused, the node still lost with its files.
	if _, err := o2.Restore(tctx(t), d, RestoreOptions{}); kindOf(err) != tools.KindConflict || !strings.Contains(err.Error(), "exited") {
		t.Errorf("restore of an exited node: %v", err)
	}
	if _, err := o2.Restore(tctx(t), "nope", RestoreOptions{}); kindOf(err) != tools.KindNotFound {
		t.Errorf("restore of an unknown id: %v", err)
	}
	if err := os.RemoveAll(dirs[b]); err != nil {
		t.Fatal(err)
	}
	if _, err := o2.Restore(tctx(t), b, RestoreOptions{}); kindOf(err) != tools.KindUsage || !strings.Contains(err.Error(), dirs[b]) || !strings.Contains(err.Error(), "--cwd") {
		t.Errorf("restore into a directory that is gone: %v", err)
	}
	if err := os.Remove(script); err != nil {
		t.Fatal(err)
	}
	if _, err := o2.Restore(tctx(t), e, RestoreOptions{}); kindOf(err) != tools.KindUsage || !strings.Contains(err.Error(), script) {
		t.Errorf("restore of a program that is gone: %v", err)
	}
	for _, id := range []string{b, e} {
		if nodeInfo(t, o2, id).Status != tools.StatusLost {
			t.Errorf("%s is not lost after a refused restore", id)
		}
		for _, p := range []string{o2.metaPath(id), o2.launchPath(id), o2.screenPath(id)} {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("a refused restore of %s lost %s: %v", id, p, err)
			}
		}
		if _, err := os.Stat(tools.SessionPath(state, id)); !os.IsNotExist(err) {
			t.Errorf("a refused restore of %s left a session file", id)
		}
	}

	// Restores: the same id, name, directory, environment; a new token.
	newDir := t.TempDir()
	for _, r := range []struct {
		id  string
		opt RestoreOptions
		dir string
	}{{a, RestoreOptions{}, dirs[a]}, {b, RestoreOptions{Cwd: newDir}, newDir}, {c, RestoreOptions{}, dirs[c]}} {
		info, err := o2.Restore(tctx(t), r.id, r.opt)
		if err != nil {
			t.Fatal(err)
		}
		if info.Terminal != r.id || info.Name != r.id || info.Status != tools.StatusRunning {
			t.Fatalf("restored %s: %+v", r.id, info)
		}
		waitText(t, o2, r.id, "hello-kept-"+r.id+" in "+r.dir)
		if _, err := tools.ReadSession(tools.SessionPath(state, r.id)); err != nil {
			t.Fatalf("restored %s has no session file: %v", r.id, err)
		}
	}
	if _, err := o2.Restore(tctx(t), a, RestoreOptions{}); kindOf(err) != tools.KindConflict || !strings.Contains(err.Error(), "running") {
		t.Errorf("restore of a running node: %v", err)
	}
	if err := o2.Forget(a); kindOf(err) != tools.KindConflict || !strings.Contains(err.Error(), "running") {
		t.Errorf("forget of a running node: %v", err)
	}
	if got := nodeInfo(t, o2, c).Recording; got == nil || got.Path != recDir {
		t.Fatalf("restored c records into %+v, want %s", got, recDir)
	}
	if types := eventTypes(readEvents(t, recDir)); types["gap"] != 1 {
		t.Fatalf("restored recording's events: %v, want one gap", types)
	}
	if got := o2.LostIDs(); len(got) != 1 || got[0] != e {
		t.Fatalf("still lost: %v, want only %s", got, e)
	}
	keepNow(o2)
	o2.Close()

	// The next start adopts the restored nodes: nothing is lost or
	// started twice.
	o3 := openOrchestratorWith(t, srv, state, cfg)
	for _, id := range []string{a, b, c} {
		if st := nodeInfo(t, o3, id).Status; st != tools.StatusRunning {
			t.Errorf("after the next start %s is %s", id, st)
		}
	}
	if got := o3.LostIDs(); len(got) != 1 || got[0] != e {
		t.Fatalf("lost after the next start: %v", got)
	}
	if err := o3.Forget(e); err != nil {
		t.Fatal(err)
	}
	if err := o3.Forget(d); err != nil { // exited before the reboot
		t.Fatal(err)
	}
	for _, id := range []string{d, e} {
		for _, p := range []string{o3.metaPath(id), o3.launchPath(id), o3.screenPath(id)} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("forget %s left %s", id, p)
			}
		}
	}
	sessions := 0
	for s := range sockets {
		out, _ := (&tmuxtest.Server{Socket: s}).Cmd("list-sessions", "-F", "#{session_name}")
		sessions += strings.Count(out, "ts-")
	}
	if sessions != 3 {
		t.Fatalf("%d node sessions run, want 3 (a, b, c once each)", sessions)
	}
}

// The keeper writes a node's last screen after it changed, and only then.
func TestKeeperWritesChangedScreensOnly(t *testing.T) {
	t.Parallel()
	rounds := make(chan struct{}, 64)
	kept := func() {
		select {
		case rounds <- struct{}{}:
		default:
		}
	}
	srv, state := newTestServer(t)
	o := openOrchestratorWith(t, srv, state, func(c *Config) { c.KeepScreens = 10 * time.Millisecond; c.hooks = &hooks{kept: kept} })
	id := launch(t, o, "sh", "-c", "echo first-line; exec cat")
	waitText(t, o, id, "first-line")
	next := func() {
		t.Helper()
		// Two rounds from now: one may have begun before the change.
		for len(rounds) > 0 {
			<-rounds
		}
		for range 2 {
			select {
			case <-rounds:
			case <-tctx(t).Done():
				t.Fatal("the keeper ran no round")
			}
		}
	}
	read := func() (statefile.KeptScreen, int64) {
		t.Helper()
		var ks statefile.KeptScreen
		if err := statefile.ReadJSON(o.screenPath(id), &ks); err != nil {
			t.Fatal(err)
		}
		return ks, o.screensKept.Load()
	}
	next()
	ks, ino := read()
	if !strings.Contains(strings.Join(ks.Lines, "\n"), "first-line") || ks.SavedAt.IsZero() {
		t.Fatalf("kept screen: %+v", ks)
	}
	next()
	if _, ino2 := read(); ino2 != ino {
		t.Fatal("the keeper wrote a screen that had not changed")
	}
	inputAndWait(t, o.Type, id, "second-line\n", &tools.WaitSpec{Wait: tools.WaitText, Text: "second-line", TimeoutMS: 20000})
	next()
	if ks, ino2 := read(); ino2 == ino || !strings.Contains(strings.Join(ks.Lines, "\n"), "second-line") {
		t.Fatalf("after a change the kept screen is\n%s", strings.Join(ks.Lines, "\n"))
	}
	if err := o.CloseNode(tctx(t), id); err != nil {
		t.Fatal(err)
	}
	next()
	if _, err := os.Stat(o.screenPath(id)); !os.IsNotExist(err) {
		t.Fatalf("a closed node's screen stays: %v", err)
	}
}
