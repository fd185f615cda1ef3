package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
)

// A human's terminal (a pane of a test-made outer tmux running
// `termsprawl attach NODE`) receives the terminal target's OSC 9 and
// OSC 777 sequences: the outer pane's raw output, read with pipe-pane,
// holds both. termsprawl notify test prints what each target answered.
func TestNotifyTerminalOSC(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	up, _, _ := e.upWith("--notify", "terminal", "--notify", "tmux", "--notify", "webhook=http://127.0.0.1:1/nothing-listens")
	defer e.down(up)
	work := strings.TrimSpace(e.must(e.ts, "new", "--name", "work", "--", "bash", "--norc", "--noprofile"))

	outer := tmuxtest.New(t)
	raw := filepath.Join(t.TempDir(), "raw")
	outer.Must("new-session", "-d", "-s", "o", "-x", "120", "-y", "30", "--",
		"env", "TERMSPRAWL_HOME="+e.state, "TERMSPRAWL_TMUX_SOCKET="+e.tmux.Socket, e.ts, "attach", work)
	outer.Must("pipe-pane", "-O", "-t", "o", "cat >> "+raw)
	if !testenv.Until(30*time.Second, func() bool {
		return strings.Contains(e.tmux.Must("list-clients", "-t", "=ts-"+work, "-F", "#{client_control_mode}"), "0")
	}) {
		t.Fatal("no human client attached")
	}

	code, out, errb := e.run(e.ts, "notify", "test")
	if code != ExitNo { // the webhook has no receiver
		t.Fatalf("notify test: exit %d\n%s%s", code, out, errb)
	}
	for _, want := range []string{"ok     terminal: OSC 9 and 777 written to 1 terminals", "ok     tmux: shown on 1 tmux clients", "FAILED webhook=http://127.0.0.1:1/nothing-listens:", "mode normal"} {
		if !strings.Contains(out, want) {
			t.Errorf("notify test printed no %q:\n%s", want, out)
		}
	}
	osc9 := "\x1b]9;termsprawl notification test: If you can read this, termsprawl can reach you here.\a"
	osc777 := "\x1b]777;notify;termsprawl notification test;If you can read this, termsprawl can reach you here.\a"
	var b []byte
	if !testenv.Until(10*time.Second, func() bool {
		b, _ = os.ReadFile(raw)
		return strings.Contains(string(b), osc9) && strings.Contains(string(b), osc777)
	}) {
		t.Fatalf("the outer terminal's raw output has no OSC 9 and 777 (%d bytes): %q", len(b), b[max(0, len(b)-400):])
	}
}
