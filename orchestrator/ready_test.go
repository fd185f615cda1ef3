package orchestrator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// slowBash is an interactive bash whose rc file takes 0.7 s before the
// prompt: input typed before it reads is echoed by the tty and then
// drawn again by readline.
func slowBash(t *testing.T) []string {
	rc := writeScript(t, "rc", "sleep 0.7\nPS1='$ '\n")
	return []string{"bash", "--noprofile", "--rcfile", rc, "-i"}
}

// CONTRACT §18: input sent right after the launch is held until the
// program reads, so the typed line is on the screen once.
func TestInputWaitsForTheProgramToRead(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t) // launches do not watch: they return at once
	id := launch(t, o, slowBash(t)...)
	ctx := tctx(t)
	cmd := "echo hello-$((6*7))"
	r, err := o.Submit(ctx, id, cmd, &tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `^hello-42$`, TimeoutMS: 10000})
	snap, _ := o.Snapshot(context.Background(), id)
	screen := strings.Join(snap.Lines, "\n")
	if err != nil || r.Wait == nil || !r.Wait.Matched {
		t.Fatalf("submit: %+v %v\n%s", r.Wait, err, screen)
	}
	if n := strings.Count(screen, cmd); n != 1 {
		t.Fatalf("the typed line is on the screen %d times, want once:\n%s", n, screen)
	}
}

// terminal_launch says whether the program was ready within the launch.
func TestLaunchSaysReady(t *testing.T) {
	t.Parallel()
	o := openWatching(t, DefaultLaunchWatch)
	for _, tt := range []struct {
		name  string
		argv  []string
		ready bool
	}{
		{"an interactive bash", bashArgv(), true},
		{"a program that prints nothing", []string{"sleep", "30"}, false},
	} {
		start := time.Now()
		info, err := o.Launch(tctx(t), LaunchSpec{Command: tt.argv, Cwd: t.TempDir(), Columns: 80, Rows: 24})
		if err != nil {
			t.Fatal(err)
		}
		if info.Ready == nil || *info.Ready != tt.ready {
			t.Errorf("%s: ready = %v, want %v (launch took %v)", tt.name, derefBool(info.Ready), tt.ready, time.Since(start))
		}
	}
}

func derefBool(p *bool) any {
	if p == nil {
		return nil
	}
	return *p
}
