package cli

import (
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// callValue runs `termsprawlctl call` as session and decodes the value.
func (e *e2e) callValue(session, op string, args any, v any) tools.Result {
	e.t.Helper()
	b, _ := json.Marshal(args)
	_, out, _ := e.run(e.ctl, "--session", session, "call", op, string(b))
	var res struct {
		OK      bool            `json:"ok"`
		Value   json.RawMessage `json:"value"`
		Error   string          `json:"error"`
		Kind    tools.Kind      `json:"kind"`
		Details map[string]any  `json:"details"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		e.t.Fatalf("%s: not a result: %v\n%s", op, err, out)
	}
	if res.OK && v != nil {
		if err := json.Unmarshal(res.Value, v); err != nil {
			e.t.Fatalf("%s: %v", op, err)
		}
	}
	return tools.Result{OK: res.OK, Value: res.Value, Error: res.Error, Kind: res.Kind, Details: res.Details}
}

// A task sent, an "always" answer given, a watch started and a permission
// hook waiting on its dialog before the orchestrator is killed with
// SIGKILL are all there after `termsprawl up`: the hook rides through and
// gets the human's answer.
func TestE2ERestartKeepsAgentState(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	up1, _ := e.up()
	a := strings.TrimSpace(e.must(e.ts, "agent", "custom", "--name", "asker", "--", "cat"))
	b := strings.TrimSpace(e.must(e.ts, "agent", "custom", "--name", "shell", "--", "bash", "--norc", "--noprofile"))
	sa := tools.SessionPath(e.state, a)

	var sent tools.ReceiptOf[tools.TaskSent]
	if r := e.callValue(e.oper, "agent_send", map[string]any{"node": b, "text": "echo task-$((2*3))", "message_id": "m1"}, &sent); !r.OK {
		t.Fatalf("agent_send: %s", r.Error)
	}
	first := e.callValue(sa, "dialog_request", map[string]any{"kind": "permission", "title": "Bash: make test", "timeout_ms": 120000, "wait_ms": 100}, nil)
	id, _ := first.Details["dialog"].(string)
	if first.Kind != tools.KindTimeout || id == "" {
		t.Fatalf("dialog_request: %+v", first)
	}
	e.must(e.ts, "answer", id, "always")
	var w tools.WatchStarted
	if r := e.callValue(e.oper, "watch_start", map[string]any{"terminal": b, "wait": "text", "text": "after-42"}, &w); !r.OK {
		t.Fatalf("watch_start: %s", r.Error)
	}
	// A permission hook waiting for a human.
	hook := exec.Command(e.ctl, "--session", sa, "hook", "claude", "PermissionRequest")
	hook.Env = e.env
	hook.Stdin = strings.NewReader(permissionInput)
	hout, herr := &syncBuffer{}, &syncBuffer{}
	hook.Stdout, hook.Stderr = hout, herr
	if err := hook.Start(); err != nil {
		t.Fatal(err)
	}
	hp := &proc{cmd: hook, exited: make(chan struct{})}
	go func() { hp.err = hook.Wait(); close(hp.exited) }()
	e.active = append(e.active, hp)
	pending := e.waitDialog(a, 30*time.Second)

	if err := up1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !up1.waitExit(15 * time.Second) {
		t.Fatal("termsprawl up survived SIGKILL")
	}
	if hp.waitExit(500 * time.Millisecond) {
		t.Fatalf("the hook gave up while termsprawl was down: %v\n%s%s", hp.err, hout.String(), herr.String())
	}
	up2, _ := e.up()
	defer e.down(up2)

	var task tools.Task
	if r := e.callValue(e.oper, "agent_task", map[string]any{"task": sent.Result.Task}, &task); !r.OK || task.Text != "echo task-$((2*3))" {
		t.Fatalf("task after restart: %+v %s", task, r.Error)
	}
	var again tools.DialogOutcome
	if r := e.callValue(sa, "dialog_request", map[string]any{"kind": "permission", "title": "Bash: make test", "wait_ms": 100}, &again); !r.OK || !again.Remembered {
		t.Fatalf("\"always\" answer after restart: %+v %s", again, r.Error)
	}
	d := e.waitDialog(a, 30*time.Second)
	if d.ID != pending.ID {
		t.Fatalf("the hook opened a second dialog %s after the restart (first %s)", d.ID, pending.ID)
	}
	e.must(e.ts, "answer", d.ID, "allow")
	if !hp.waitExit(60 * time.Second) {
		t.Fatal("the hook did not finish after the answer")
	}
	if hp.err != nil {
		t.Fatalf("hook: %v\n%s", hp.err, herr.String())
	}
	if behavior, _ := hookDecision(t, hout.String()); behavior != "allow" {
		t.Fatalf("hook after restart printed %s", hout.String())
	}

	e.submit(e.oper, b, "echo after-$((6*7))", "after-42")
	var fired tools.WatchFired
	if r := e.callValue(e.oper, "watch_wait", map[string]any{"watch": w.Watch, "timeout_ms": 30000}, &fired); !r.OK || !fired.Fired {
		t.Fatalf("watch after restart: %+v %s", fired, r.Error)
	}
}
