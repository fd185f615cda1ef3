package orchestrator

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// waitSleepState waits (bounded) until node id is asleep or awake.
func waitSleepState(t *testing.T, o *Orchestrator, id string, asleep bool) {
	t.Helper()
	n := o.node(id)
	deadline := time.Now().Add(20 * time.Second)
	for (n.asleep.Load() && n.scr.Asleep()) != asleep {
		if time.Now().After(deadline) {
			t.Fatalf("node %s: asleep %v, emulator released %v; want asleep=%v", id, n.asleep.Load(), n.scr.Asleep(), asleep)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShowingObservesNode: a page that shows a sleeping node wakes it and
// keeps it awake (following output) while it shows it; when no page shows
// it any more, it sleeps again. Peek lists it without waking it.
func TestShowingObservesNode(t *testing.T) {
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
	// It follows output: several revisions pass, over many idle periods,
	// and it never sleeps meanwhile.
	for i := 0; i < 8; i++ {
		rev, ch := a.Changed()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no revision after %d while shown", rev)
		}
		time.Sleep(idle / 2)
		if o.Asleep(id) {
			t.Fatalf("a shown node fell asleep (after %d idle periods)", i)
		}
	}
	g := a.Cells()
	if g.Columns == 0 || g.Rows == 0 {
		t.Fatalf("Cells of a shown node: %dx%d", g.Columns, g.Rows)
	}
	a.Close()
	a.Close() // idempotent
	if got := o.Observers(id); got != 1 {
		t.Fatalf("observers = %d after one page left, want 1", got)
	}
	time.Sleep(3 * idle)
	if o.Asleep(id) {
		t.Fatal("the node slept while the second page still showed it")
	}
	b.Close()
	waitSleepState(t, o, id, true)

	if _, err := o.Show(tctx(t), "nope"); tools.KindOf(err) != tools.KindNotFound {
		t.Fatalf("Show of a missing node: %v", err)
	}
}
