package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// Lifecycle races, each widened with a hook rather than timed with sleeps.
// The hooks are package variables: these tests do not run in parallel.

// within fails the test unless ch delivers within d (a hang detector, not
// a timing assertion: d is generous).
func within[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s did not happen within %v", what, d)
	}
	var zero T
	return zero
}

// A wait in flight ends as soon as a close begins, before the screen is
// detached, instead of spinning on the closed screen until the close ends.
func TestWaitEndsWhenCloseBegins(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, "sh", "-c", "echo ready; sleep 60")
	waitText(t, o, id, "ready")

	var turns atomic.Int64
	inLoop := make(chan struct{}, 1)
	detached, release := make(chan struct{}), make(chan struct{})
	o.hooks.WaitLoop = func(*node.Node) {
		turns.Add(1)
		select {
		case inLoop <- struct{}{}:
		default:
		}
	}
	o.hooks.closed = func(*node.Node) { close(detached); <-release }
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(func() { free(); o.hooks.WaitLoop, o.hooks.closed = nil, nil })

	waited := make(chan error, 1)
	go func() {
		_, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitText, Text: "never-printed", TimeoutMS: 30000})
		waited <- err
	}()
	within(t, inLoop, 10*time.Second, "the wait entering its loop")
	closed := make(chan error, 1)
	go func() { closed <- o.CloseNode(tctx(t), id) }()
	within(t, detached, 10*time.Second, "CloseNode detaching the screen")
	// The close is held between detach and its end: the wait must be over.
	err := within(t, waited, 10*time.Second, "the wait ending while the close is in progress")
	if tools.KindOf(err) != tools.KindNotFound {
		t.Fatalf("wait during close: %v (kind %s), want not_found", err, tools.KindOf(err))
	}
	spun := turns.Load()
	free()
	if err := within(t, closed, 20*time.Second, "CloseNode returning"); err != nil {
		t.Fatal(err)
	}
	if spun > 20 {
		t.Fatalf("the wait turned %d times in its loop during the close: it spun", spun)
	}
	// Reads racing the close answer not_found, and the list omits it.
	if _, err := o.Snapshot(context.Background(), id); tools.KindOf(err) != tools.KindNotFound {
		t.Fatalf("snapshot after close: %v", err)
	}
}

// A wait that arrives while the pump is switching an idle node off sees
// it asleep and wakes it, so the output it waits for still reaches it.
func TestWaitDuringSleepSwitchOff(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	deciding, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(func() { free() })
	o := openOrchestratorWith(t, srv, dir, func(c *Config) {
		c.IdleAfter = 200 * time.Millisecond
		c.hooks = &hooks{Hooks: node.Hooks{Sleeping: func(*node.Node) {
			once.Do(func() { close(deciding); <-release })
		}}}
	})
	id := launch(t, o, "sh", "-c", "read x; echo MARK-$x; sleep 60")
	n := o.node(id)
	within(t, deciding, 20*time.Second, "the idle node deciding to sleep")

	waited := make(chan error, 1)
	go func() {
		r, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitText, Text: "MARK-7", TimeoutMS: 20000})
		if err == nil && !r.Matched {
			err = errors.New("wait did not match")
		}
		waited <- err
	}()
	testenv.Eventually(t, 20*time.Second, func() bool { return n.Observers.Load() > 0 }, testenv.Msg("the wait never registered"))
	free()
	// The program prints only now, through tmux itself (not an operation
	// that would observe the node).
	if _, err := srv.Cmd("send-keys", "-t", "=ts-"+id+":", "7", "Enter"); err != nil {
		t.Fatal(err)
	}
	if err := within(t, waited, 30*time.Second, "the wait"); err != nil {
		t.Fatalf("a wait that arrived during the switch-off: %v", err)
	}
}

// Shutdown waits for a close in progress instead of tearing its clients
// down under it (and both detach the node only once).
func TestShutdownWaitsForClose(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, "sh", "-c", "sleep 60")
	detached, release := make(chan struct{}), make(chan struct{})
	shutdown := make(chan struct{})
	o.hooks.closed = func(*node.Node) { close(detached); <-release }
	o.hooks.shutdown = func() { close(shutdown) }
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(func() { free(); o.hooks.closed, o.hooks.shutdown = nil, nil })

	closed := make(chan error, 1)
	go func() { closed <- o.CloseNode(tctx(t), id) }()
	within(t, detached, 10*time.Second, "CloseNode detaching the screen")
	stopped := make(chan struct{})
	go func() { o.Close(); close(stopped) }()
	within(t, shutdown, 10*time.Second, "Close starting")
	free()
	within(t, stopped, 30*time.Second, "Close returning")
	// Close returned, so the close it waited for is complete.
	if _, err := os.Stat(tools.SessionPath(o.StateDir(), id)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Close returned before the close in progress finished: session file %v", err)
	}
	if err := within(t, closed, 10*time.Second, "CloseNode returning"); err != nil {
		t.Fatal(err)
	}
}

// Detaching a node twice at once never closes a channel twice.
func TestDetachTwiceAtOnce(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, "sh", "-c", "sleep 60")
	n := o.node(id)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); n.Detach() }()
	}
	wg.Wait()
}

// Revisions never repeat across orchestrator restarts: a cursor from
// before a restart is history-truncated, never usage and never judged
// against the new screen.
func TestRevisionsNeverRepeatAcrossRestart(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	dir := o.StateDir()
	id := launch(t, o, "sh", "-c", "echo first-life; exec cat")
	waitText(t, o, id, "first-life")
	before, err := o.Snapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	o2 := openOrchestrator(t, srv, dir)
	after, err := o2.Snapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if after.Revision <= before.Revision {
		t.Fatalf("revision after the restart %d is not above %d", after.Revision, before.Revision)
	}
	old := before.Revision
	_, err = o2.CaptureSince(context.Background(), id, old)
	if tools.KindOf(err) != tools.KindConflict {
		t.Fatalf("capture_since an old cursor: %v, want conflict", err)
	}
	// It names the oldest revision kept, from which a reader asks again.
	var te *tools.Error
	if !errors.As(err, &te) || te.Details["reason"] != "history-truncated" {
		t.Fatalf("capture_since an old cursor: %#v", err)
	}
	oldest, ok := te.Details["oldest"].(uint64)
	if !ok || oldest <= old {
		t.Fatalf("history-truncated names no oldest revision after %d: %v", old, te.Details)
	}
	if _, err := o2.CaptureSince(context.Background(), id, oldest); err != nil {
		t.Fatalf("capture_since the oldest revision kept (%d): %v", oldest, err)
	}
	if _, err := o2.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitText, Text: "first-life", After: &old, TimeoutMS: 1000}); tools.KindOf(err) != tools.KindConflict {
		t.Fatalf("wait after an old revision: %v, want conflict", err)
	}
	o2.Close()
	o3 := openOrchestrator(t, srv, dir)
	third, err := o3.Snapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if third.Revision <= after.Revision {
		t.Fatalf("revision after the second restart %d is not above %d", third.Revision, after.Revision)
	}
}
