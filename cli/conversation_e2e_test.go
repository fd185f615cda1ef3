package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// Issue 34 item 1, as it was found: from inside an agent's node, a Stop
// hook's JSON with session_id "--dangerously-skip-permissions" piped into
// the real termsprawlctl (as Claude Code runs its hooks); then a reboot
// (termsprawl stopped, its tmux servers killed) and `up --restore`. The
// hook refuses the id, and the restored agent's argv has no such flag
// and no --resume (CONTRACT §26).
func TestE2EForgedConversationNeverReachesARestore(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	bin, out := t.TempDir(), t.TempDir()
	argvFile := filepath.Join(out, "argv.txt")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " + argvFile + ".tmp && mv " + argvFile + ".tmp " + argvFile + "\nexec cat\n"
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e.prependPath(bin)
	up, _, _ := e.upWith()
	id := strings.TrimSpace(e.must(e.ts, "agent", "claude", "--name", "forged", "--sandbox", "none"))
	waitArgv := func() []string {
		t.Helper()
		var b []byte
		testenv.Eventually(t, 30*time.Second, func() bool {
			var err error
			b, err = os.ReadFile(argvFile)
			return err == nil
		}, testenv.Msg("the agent never started"))
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	first := waitArgv()

	// The hook, as Claude Code runs it inside the node.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hook := exec.CommandContext(ctx, e.ctl, "hook", "claude", "Stop")
	hook.Env = append(append([]string{}, e.env...), SessionEnv+"="+tools.SessionPath(e.state, id), "TERMSPRAWL_NODE="+id)
	hook.Stdin = strings.NewReader(`{"hook_event_name":"Stop","session_id":"--dangerously-skip-permissions"}`)
	hout, err := hook.CombinedOutput()
	if err != nil || !strings.Contains(string(hout), "refused the conversation id") {
		t.Fatalf("the hook: %v\n%s", err, hout)
	}

	var list tools.NodeList
	if err := json.Unmarshal([]byte(e.must(e.ts, "ls", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	e.down(up)
	for _, n := range list.Terminals {
		_, _ = (&tmuxtest.Server{Socket: n.TmuxSocket}).Cmd("kill-server")
	}
	os.Remove(argvFile)
	up2, _, _ := e.upWith("--restore")
	defer e.down(up2)
	argv := waitArgv()
	for _, a := range argv {
		if a == "--dangerously-skip-permissions" || a == "--resume" {
			t.Fatalf("restored with %q (launched with %q)", argv, first)
		}
	}
	if len(argv) != len(first) {
		t.Fatalf("restored with %q, launched with %q", argv, first)
	}
}
