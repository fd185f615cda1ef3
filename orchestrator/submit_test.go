package orchestrator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// swallowTUI is a small program that behaves like Claude Code and Codex:
// an Enter arriving within 100 ms of other input (a paste) is swallowed.
const swallowTUI = `
import os, sys, termios, tty, time, select
fd = sys.stdin.fileno()
tty.setraw(fd)
os.write(1, b"\x1b[?2004h> ")
buf, last = b"", 0.0
while True:
    r, _, _ = select.select([fd], [], [])
    data = os.read(fd, 4096)
    now = time.monotonic()
    for b in data:
        c = bytes([b])
        if c == b"\r":
            if now - last < 0.1:
                os.write(1, b"[swallowed]")
                continue
            line = buf.replace(b"\x1b[200~", b"").replace(b"\x1b[201~", b"")
            os.write(1, b"\r\nSUBMITTED: " + line + b"\r\n> ")
            buf = b""
        elif c == b"\x03":
            sys.exit(0)
        else:
            buf += c
            last = now
            os.write(1, c)
`

func TestSubmitOnEnterSwallowingTUI(t *testing.T) {
	t.Parallel()
	need(t, "python3")
	o, _ := newTestOrchestrator(t)
	script := writeScript(t, "tui.py", swallowTUI)
	id := launch(t, o, "python3", script)
	waitText(t, o, id, ">")
	ctx := tctx(t)

	// The naive way (type, then Enter at once) loses the Enter here.
	if _, err := o.Type(ctx, id, "naive", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Press(ctx, id, "Enter", &tools.WaitSpec{Wait: tools.WaitText, Text: "[swallowed]", TimeoutMS: 5000}); err != nil {
		t.Fatal(err)
	}
	snap, _ := o.Snapshot(context.Background(), id)
	if strings.Contains(strings.Join(snap.Lines, "\n"), "SUBMITTED: naive") {
		t.Fatal("the test program did not swallow an immediate Enter; the test proves nothing")
	}
	if _, err := o.Press(ctx, id, "C-u", nil); err != nil { // no-op for the program
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if _, err := o.Press(ctx, id, "Enter", nil); err != nil { // flush "naive"
		t.Fatal(err)
	}
	waitText(t, o, id, "SUBMITTED: naive")

	// terminal_submit waits for the program to take the text.
	for _, text := range []string{"hello world", "multi\nline paste"} {
		r, err := o.Submit(ctx, id, text, &tools.WaitSpec{Wait: tools.WaitText, Text: "SUBMITTED: " + strings.Split(text, "\n")[0], TimeoutMS: 10000})
		if err != nil || r.Wait == nil || !r.Wait.Matched {
			snap, _ := o.Snapshot(context.Background(), id)
			t.Fatalf("submit %q: %+v %v\n%s", text, r.Wait, err, strings.Join(snap.Lines, "\n"))
		}
	}
	// Exactly one Enter per submit: no empty submission followed. A last
	// submit is the barrier: an extra Enter of the ones above would have
	// reached the program before it, so its line comes after any empty one.
	if r, err := o.Submit(ctx, id, "barrier", &tools.WaitSpec{Wait: tools.WaitText, Text: "SUBMITTED: barrier", TimeoutMS: 10000}); err != nil || r.Wait == nil || !r.Wait.Matched {
		t.Fatalf("submit barrier: %+v %v", r.Wait, err)
	}
	snap, _ = o.Snapshot(context.Background(), id)
	if n := strings.Count(strings.Join(snap.Lines, "\n"), "SUBMITTED: \n"); n != 0 {
		t.Fatalf("%d empty submissions: Enter was pressed more than once", n)
	}
}
