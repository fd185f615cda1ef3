package orchestrator

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// TestUnobservedNodeSleeps: a node nobody observes stops receiving output
// and drops its emulator; observing it wakes it with tmux's current screen.
func TestUnobservedNodeSleeps(t *testing.T) {
	srv := tmuxtest.New(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.IdleAfter = 300 * time.Millisecond })
	id := launch(t, o, "sh", "-c", "i=0; while :; do echo tick-$i; i=$((i+1)); sleep 0.02; done")
	n := o.node(id)
	deadline := time.Now().Add(20 * time.Second)
	// asleep is decided first (so no observer is lost), the emulator is
	// released after the switch-off: wait for both.
	for !(n.asleep.Load() && n.scr.Asleep()) {
		if time.Now().After(deadline) {
			t.Fatalf("an unobserved node never went to sleep (asleep %v, emulator released %v)", n.asleep.Load(), n.scr.Asleep())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// tmux sends nothing while it sleeps.
	total := n.stream.Total()
	time.Sleep(300 * time.Millisecond)
	if got := n.stream.Total(); got > total+4096 {
		t.Fatalf("a sleeping node still received %d bytes of output", got-total)
	}
	// Observing wakes it with the current screen.
	snap, err := o.Snapshot(id)
	if err != nil {
		t.Fatal(err)
	}
	if n.asleep.Load() || n.scr.Asleep() {
		t.Fatal("a snapshot did not wake the node")
	}
	if snap.Revision == 0 {
		t.Fatalf("snapshot after waking: %+v", snap)
	}
	// And it follows output again: a wait for a fresh tick succeeds.
	if _, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `tick-\d+`, TimeoutMS: 10000}); err != nil {
		t.Fatal(err)
	}
	// A wait keeps it awake for as long as it lasts.
	r, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitText, Text: "never-printed", TimeoutMS: 900})
	if err == nil || !r.TimedOut {
		t.Fatalf("wait = %+v, %v", r, err)
	}
	if n.asleep.Load() {
		t.Fatal("the node slept while a wait was observing it")
	}
}
