package orchestrator

import (
	"context"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// CONTRACT §18: under `stty -echo` the typed text is not echoed, so the
// program's own output that holds it satisfies the wait.
func TestSubmitWaitUnderNoEcho(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id := launch(t, o, "bash", "--norc", "--noprofile", "-c",
		`stty -echo; echo READS; while read l; do printf 'AFTER-%s\n' "$l"; done`)
	waitText(t, o, id, "READS")
	ctx := tctx(t)
	for _, tt := range []struct{ text, want string }{{"go42", "AFTER-go42"}, {"go43", "go43"}} {
		r, err := o.Submit(ctx, id, tt.text, &tools.WaitSpec{Wait: tools.WaitText, Text: tt.want, TimeoutMS: 5000})
		if err != nil || r.Wait == nil || !r.Wait.Matched {
			snap, _ := o.Snapshot(context.Background(), id)
			t.Fatalf("submit %q waiting for %q: %+v %v\n%s", tt.text, tt.want, r.Wait, err, strings.Join(snap.Lines, "\n"))
		}
	}
}

// With echo on, the echo alone never satisfies a wait for the typed text;
// a program that prints it back after the echo does.
func TestEchoAloneNeverSatisfies(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	sink := launch(t, o, "bash", "--norc", "--noprofile", "-c", `echo READS; cat >/dev/null`)
	cat := launch(t, o, "bash", "--norc", "--noprofile", "-c", `echo READS; exec cat`)
	waitText(t, o, sink, "READS")
	waitText(t, o, cat, "READS")
	ctx := tctx(t)
	r, err := o.Submit(ctx, sink, "zz-echo-7", &tools.WaitSpec{Wait: tools.WaitText, Text: "zz-echo-7", TimeoutMS: 1500})
	if err != nil || r.Wait == nil || !r.Wait.TimedOut {
		t.Fatalf("a wait for the typed text on a program that prints nothing: %+v %v (it matched the echo)", r.Wait, err)
	}
	if snap, _ := o.Snapshot(context.Background(), sink); !strings.Contains(strings.Join(snap.Lines, "\n"), "zz-echo-7") {
		t.Fatalf("the echo is not on the screen:\n%s", strings.Join(snap.Lines, "\n"))
	}
	r, err = o.Submit(ctx, cat, "hello-cat", &tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `^hello-cat$`, TimeoutMS: 5000})
	if err != nil || r.Wait == nil || !r.Wait.Matched {
		snap, _ := o.Snapshot(context.Background(), cat)
		t.Fatalf("cat printed the line back: %+v %v\n%s", r.Wait, err, strings.Join(snap.Lines, "\n"))
	}
}
