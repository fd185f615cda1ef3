package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// An agent that runs `termsprawl answer ID allow` in its own node, on a
// real pending dialog of its own, is refused with how a human answers,
// and the dialog stays pending; the picker C-b a runs (with --operator)
// still answers it (CONTRACT §26–§27, issue 34 item 6).
func TestAnswerInsideANodeIsTheNodes(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	up, _ := e.up()
	defer e.down(up)
	var rec tools.ReceiptOf[tools.NodeInfo]
	e.op("terminal_launch", map[string]any{"name": "agentish", "command": []string{"sh", "-c", "exec cat"}}, &rec)
	node := rec.Result
	sess := tools.SessionPath(e.state, node.Terminal)
	b, _ := json.Marshal(map[string]any{"kind": "permission", "title": "Bash: rm -rf ~/work", "tool": "Bash", "input": `{"command":"rm -rf ~/work"}`, "wait_ms": 40000})
	out := &syncBuffer{}
	ask := e.start(e.ctl, out, &syncBuffer{}, "--session", sess, "call", "dialog_request", string(b))
	d := e.waitDialog(node.Terminal, 20*time.Second)

	// As the node's program runs it: its environment has the node's
	// session file (and nothing else says who it is).
	inNode := func(args ...string) (int, string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, e.ts, args...)
		cmd.Env = append(append([]string{}, e.env...), SessionEnv+"="+sess, "TERMSPRAWL_NODE="+node.Terminal)
		var o, eb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &eb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, o.String(), eb.String()
	}
	for _, mode := range []string{"allow", "always"} {
		code, stdout, stderr := inNode("answer", d.ID, mode)
		if code != ExitNo || !strings.Contains(stderr, "acts with that node's own session") || !strings.Contains(stderr, "C-b "+tools.PickerKey) || !strings.Contains(stderr, "dashboard") {
			t.Fatalf("answer %s inside the node: exit %d\n%s%s", mode, code, stdout, stderr)
		}
	}
	var l tools.DialogList
	e.op("dialog_list", map[string]any{}, &l)
	if len(l.Dialogs) != 1 || l.Dialogs[0].ID != d.ID {
		t.Fatalf("the dialog is not pending any more: %+v", l.Dialogs)
	}
	select {
	case <-ask.exited:
		t.Fatalf("the agent's request returned: %s", out.String())
	default:
	}
	// Approving a repository's setup is the human's too.
	if code, _, stderr := inNode("trust", t.TempDir()); code != ExitNo || !strings.Contains(stderr, "is the human's") {
		t.Fatalf("trust inside the node: exit %d %s", code, stderr)
	}
	// The human, explicitly: --operator (what C-b a's picker passes).
	if code, stdout, stderr := inNode("--operator", "answer", d.ID, "deny", "--reason", "no"); code != ExitOK {
		t.Fatalf("--operator answer: exit %d\n%s%s", code, stdout, stderr)
	}
	if !ask.waitExit(20 * time.Second) {
		t.Fatal("the agent's request did not return after the human's answer")
	}
	if !strings.Contains(out.String(), `"mode": "deny"`) {
		t.Fatalf("the agent got %s", out.String())
	}
}

func TestTmuxIsOurs(t *testing.T) {
	t.Parallel()
	for env, want := range map[string]bool{
		"/tmp/tmux-1000/termsprawl,123,0":    true,
		"/tmp/tmux-1000/termsprawl-2,123,0":  true,
		"/tmp/tmux-1000/termsprawl-x,123,0":  false,
		"/tmp/tmux-1000/default,123,0":       false,
		"/tmp/tmux-1000/termsprawlish,123,0": false,
		"":                                   false,
	} {
		if got := tmuxIsOurs(env, "termsprawl"); got != want {
			t.Errorf("%q: %v", env, got)
		}
	}
}
