package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// TestUnobservedNodeSleeps: a node nobody observes stops receiving output
// and drops its emulator; observing it wakes it with tmux's current screen.
func TestUnobservedNodeSleeps(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.IdleAfter = 300 * time.Millisecond })
	// Each tick is a 300-byte line; the program also counts its ticks in
	// a file, which is how the test knows output happened while tmux
	// (rightly) sent none of it.
	count := filepath.Join(t.TempDir(), "count")
	id := launch(t, o, "sh", "-c", "i=0; while :; do printf 'tick-%d %0300d\\n' $i 0; echo $i > "+count+".new; mv "+count+".new "+count+"; i=$((i+1)); sleep 0.02; done")
	// The program writes its count into the test's folder until it ends:
	// close it (a close returns once its pid is gone) before the folder
	// is removed (cleanups run in reverse).
	t.Cleanup(func() {
		if err := o.CloseNode(context.Background(), id); err != nil {
			t.Errorf("close %s: %v", id, err)
		}
	})
	n := o.node(id)
	// asleep is decided first (so no observer is lost), the emulator is
	// released after the switch-off: wait for both.
	testenv.Eventually(t, 20*time.Second, func() bool { return n.Asleep.Load() && n.Scr.Asleep() }, func() string {
		return fmt.Sprintf("an unobserved node never went to sleep (asleep %v, emulator released %v)", n.Asleep.Load(), n.Scr.Asleep())
	})
	// tmux sends nothing while it sleeps: 40 more ticks (12 KB) are
	// printed, and at most what was in flight (4 KB) arrives.
	total := n.Stream.Total()
	ticks := func() int {
		b, _ := os.ReadFile(count)
		i, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return i
	}
	from := ticks()
	testenv.Eventually(t, 20*time.Second, func() bool { return ticks() >= from+40 }, testenv.Msg("the program did not print 40 more ticks"))
	if got := n.Stream.Total(); got > total+4096 {
		t.Fatalf("a sleeping node still received %d bytes of output", got-total)
	}
	// Observing wakes it with the current screen.
	snap, err := o.Snapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if n.Asleep.Load() || n.Scr.Asleep() {
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
	if n.Asleep.Load() {
		t.Fatal("the node slept while a wait was observing it")
	}
}
