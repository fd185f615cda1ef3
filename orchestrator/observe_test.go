package orchestrator

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// waitSleepState waits (bounded) until node id is asleep or awake.
func waitSleepState(t *testing.T, o *Orchestrator, id string, asleep bool) {
	t.Helper()
	n := o.node(id)
	testenv.Eventually(t, 20*time.Second, func() bool { return (n.Asleep.Load() && n.Scr.Asleep()) == asleep }, func() string {
		return fmt.Sprintf("node %s: asleep %v, emulator released %v; want asleep=%v", id, n.Asleep.Load(), n.Scr.Asleep(), asleep)
	})
}

// followRevisions waits for k new revisions of a shown node (changed is
// its page's Changed), calling each after every one: the test's clock is
// the program's output, not a sleep.
func followRevisions(t *testing.T, changed func() (uint64, <-chan struct{}), k int, each func(i int)) {
	t.Helper()
	for i := range k {
		rev, ch := changed()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no revision after %d while shown", rev)
		}
		each(i)
	}
}

// TestShowingObservesNode: a page that shows a sleeping node wakes it and
// keeps it awake (following output) while it shows it; when no page shows
// it any more, it sleeps again. Peek lists it without waking it.
func TestShowingObservesNode(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	idle := 200 * time.Millisecond
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.IdleAfter = idle })
	id := launch(t, o, "sh", "-c", "i=0; while :; do echo tick-$i; i=$((i+1)); sleep 0.05; done")
	waitSleepState(t, o, id, true)

	// Peek is no observation.
	rows := o.Peek()
	if len(rows) != 1 || rows[0].Terminal != id || rows[0].Status != tools.StatusRunning {
		t.Fatalf("Peek = %+v", rows)
	}
	if !o.Asleep(id) {
		t.Fatal("Peek woke the node")
	}

	a, err := o.Show(tctx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := o.Show(tctx(t), id) // a second page
	if err != nil {
		t.Fatal(err)
	}
	if o.Asleep(id) {
		t.Fatal("Show returned with the node still asleep")
	}
	if got := o.Observers(id); got != 2 {
		t.Fatalf("observers = %d with two pages, want 2", got)
	}
	// It follows output: 30 ticks' revisions pass (over seven idle
	// periods), and it never sleeps meanwhile.
	followRevisions(t, a.Changed, 30, func(i int) {
		if o.Asleep(id) {
			t.Fatalf("a shown node fell asleep (after %d revisions)", i)
		}
	})
	g := a.Cells()
	if g.Columns == 0 || g.Rows == 0 {
		t.Fatalf("Cells of a shown node: %dx%d", g.Columns, g.Rows)
	}
	a.Close()
	a.Close() // idempotent
	if got := o.Observers(id); got != 1 {
		t.Fatalf("observers = %d after one page left, want 1", got)
	}
	// Fifteen more ticks (over three idle periods) reach the second page.
	followRevisions(t, b.Changed, 15, func(int) {})
	if o.Asleep(id) {
		t.Fatal("the node slept while the second page still showed it")
	}
	b.Close()
	waitSleepState(t, o, id, true)

	if _, err := o.Show(tctx(t), "nope"); tools.KindOf(err) != tools.KindNotFound {
		t.Fatalf("Show of a missing node: %v", err)
	}
}
