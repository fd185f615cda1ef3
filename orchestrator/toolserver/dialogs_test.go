package toolserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// A dialog outlives one request: a caller whose wait ran out waits again
// on the SAME dialog (never a second one), and gets the human's answer
// with the reason.
func TestDialogRepeatedBoundedWaits(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 5 s on a loaded 2-core machine")
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	node := apiLaunch(t, op, "cat")
	sess := s.session(node)

	res := apiFail(t, sess, "dialog_request", apiM{"kind": "permission", "title": "Bash: make deploy", "timeout_ms": 60000, "wait_ms": 50}, tools.KindTimeout)
	id, _ := res.Details["dialog"].(string)
	if id == "" || res.Details["open"] != true || !res.Retryable {
		t.Fatalf("a wait that ran out should name the open dialog: %s", apiRes(res))
	}
	for range 3 {
		again := apiFail(t, sess, "dialog_request", apiM{"dialog": id, "wait_ms": 50}, tools.KindTimeout)
		if again.Details["dialog"] != id {
			t.Fatalf("waiting again named another dialog: %s", apiRes(again))
		}
	}
	var l tools.DialogList
	apiOK(t, op, "dialog_list", nil, &l)
	if len(l.Dialogs) != 1 || l.Dialogs[0].ID != id || l.Dialogs[0].Expires.IsZero() {
		t.Fatalf("repeated waits opened more dialogs, or no expiry: %+v", l)
	}

	// Another node may not wait on it.
	other := s.session(apiLaunch(t, op, "cat"))
	apiFail(t, other, "dialog_request", apiM{"dialog": id, "wait_ms": 50}, tools.KindForbidden)
	// Neither kind nor title nor dialog: usage before anything opens.
	apiFail(t, sess, "dialog_request", apiM{"wait_ms": 50}, tools.KindUsage)

	got := make(chan tools.Result, 1)
	go func() {
		got <- tools.Call(context.Background(), sess, tools.Request{Operation: "dialog_request", Args: apiArgs(t, apiM{"dialog": id})}, tools.CallOptions{})
	}()
	apiMutate(t, op, "dialog_answer", apiM{"dialog": id, "mode": "deny", "reason": "not on a Friday"})
	r := <-got
	var out tools.DialogOutcome
	if !r.OK || tools.DecodeValue(r.Value, &out) != nil || out.Answer.Mode != "deny" || out.Answer.Reason != "not on a Friday" {
		t.Fatalf("the waiter got %s", apiRes(r))
	}
	// A wait after the end still gets the answer.
	var late tools.DialogOutcome
	apiOK(t, sess, "dialog_request", apiM{"dialog": id}, &late)
	if late.Answer.Reason != "not on a Friday" {
		t.Fatalf("late wait: %+v", late)
	}
}

// Tasks, dialogs, "always" answers, watches and reported states are on
// disk: a new orchestrator on the same state dir has them all, and what
// belonged to a node that closed meanwhile is gone.
func TestToolTablesSurviveRestart(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 8 s on a loaded 2-core machine")
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	launch := func(name string) string {
		r, _ := apiMutate(t, op, "agent_launch", apiM{"agent": "custom", "command": []string{"cat"}, "name": name})
		var info tools.NodeInfo
		if err := tools.DecodeValue(r.Result, &info); err != nil {
			t.Fatal(err)
		}
		return info.Terminal
	}
	a, b, gone := launch("a"), launch("b"), launch("gone")
	sa, sb, sg := s.session(a), s.session(b), s.session(gone)

	apiOK(t, sb, "agent_report", apiM{"state": "idle", "message": "ready", "accepts_tasks": true}, nil)
	r, _ := apiMutate(t, sa, "agent_send", apiM{"node": b, "text": "review", "message_id": "m1"})
	var sent tools.TaskSent
	if err := tools.DecodeValue(r.Result, &sent); err != nil {
		t.Fatal(err)
	}
	// An "always" answer.
	first := apiFail(t, sa, "dialog_request", apiM{"kind": "permission", "title": "Bash: go test ./...", "timeout_ms": 60000, "wait_ms": 20}, tools.KindTimeout)
	apiMutate(t, op, "dialog_answer", apiM{"dialog": first.Details["dialog"], "mode": "always"})
	// An open dialog, and one of the node that will close.
	open := apiFail(t, sa, "dialog_request", apiM{"kind": "permission", "title": "Bash: rm -rf build", "timeout_ms": 60000, "wait_ms": 20}, tools.KindTimeout)
	apiFail(t, sg, "dialog_request", apiM{"kind": "permission", "title": "Bash: x", "timeout_ms": 60000, "wait_ms": 20}, tools.KindTimeout)
	var w tools.WatchStarted
	apiOK(t, op, "watch_start", apiM{"terminal": b, "wait": "text", "text": "WATCHED"}, &w)

	s.stop()
	for _, f := range []string{dialogsFile, agentsFile, watchesFile} {
		if st, err := os.Stat(filepath.Join(dir, persistDir, f)); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", f, err, st)
		}
	}
	s2 := apiStart(t, tmux, dir)
	op = s2.op()

	var task tools.Task
	apiOK(t, op, "agent_task", apiM{"task": sent.Task}, &task)
	if task.Text != "review" || task.State != tools.TaskPending {
		t.Fatalf("task after restart: %+v", task)
	}
	var status tools.AgentList
	apiOK(t, op, "agent_status", nil, &status)
	for _, ag := range status.Agents {
		if ag.Node == b && (ag.State != "idle" || !ag.AcceptsTasks) {
			t.Fatalf("reported state after restart: %+v", ag)
		}
	}
	var remembered tools.DialogOutcome
	apiOK(t, sa, "dialog_request", apiM{"kind": "permission", "title": "Bash: go test ./...", "wait_ms": 20}, &remembered)
	if !remembered.Remembered || remembered.Answer.Mode != tools.AnswerAllow {
		t.Fatalf("\"always\" answer after restart: %+v", remembered)
	}
	var l tools.DialogList
	apiOK(t, op, "dialog_list", nil, &l)
	if len(l.Dialogs) != 2 {
		t.Fatalf("open dialogs after restart: %+v", l)
	}
	id := open.Details["dialog"].(string)
	apiFail(t, sa, "dialog_request", apiM{"dialog": id, "wait_ms": 20}, tools.KindTimeout)
	apiMutate(t, op, "dialog_answer", apiM{"dialog": id, "mode": "allow"})
	var out tools.DialogOutcome
	apiOK(t, sa, "dialog_request", apiM{"dialog": id}, &out)
	if out.Answer.Mode != "allow" {
		t.Fatalf("dialog after restart: %+v", out)
	}
	// New dialogs do not reuse an id from before.
	next := apiFail(t, sa, "dialog_request", apiM{"kind": "question", "title": "which?", "options": []string{"x", "y"}, "wait_ms": 20}, tools.KindTimeout)
	if next.Details["dialog"] == id || next.Details["dialog"] == first.Details["dialog"] {
		t.Fatalf("dialog id reused: %v", next.Details["dialog"])
	}

	// The watch is live again and fires on new output.
	apiMutate(t, op, "terminal_submit", apiM{"terminal": b, "text": "WATCHED"})
	var fired tools.WatchFired
	apiOK(t, op, "watch_wait", apiM{"watch": w.Watch, "timeout_ms": 20000}, &fired)
	if !fired.Fired {
		t.Fatalf("watch after restart: %+v", fired)
	}

	// Closing a node purges what was its own, also on disk.
	apiMutate(t, op, "terminal_close", apiM{"terminal": gone})
	apiOK(t, op, "dialog_list", nil, &l)
	for _, d := range l.Dialogs {
		if d.Node == gone {
			t.Fatalf("a closed node's dialog is still listed: %+v", d)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, persistDir, dialogsFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), `"node": "`+gone+`"`) || strings.Contains(string(raw), `"node":"`+gone+`"`) {
		t.Fatalf("a closed node's dialog is still on disk:\n%s", raw)
	}
}

// A human attached to any node sees one line when an agent starts
// waiting on a permission dialog: the node and how to answer.
func TestDialogTellsAttachedHumans(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 5 s on a loaded 2-core machine")
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	watched := apiLaunch(t, op, "cat")
	r, _ := apiMutate(t, op, "agent_launch", apiM{"agent": "custom", "command": []string{"cat"}, "name": "asker"})
	var ai tools.NodeInfo
	if err := json.Unmarshal(r.Result, &ai); err != nil || ai.Terminal == "" {
		t.Fatalf("agent_launch result %s: %v", r.Result, err)
	}
	asker := ai.Terminal
	outer := tmuxtest.New(t)
	outer.Must("new-session", "-d", "-s", "human", "-x", "160", "-y", "20",
		"env", "-u", "TMUX", "tmux", "-L", tmux.Socket, "-f", os.DevNull, "attach-session", "-t", "=ts-"+watched)
	var l tools.NodeList
	if !testenv.Until(20*time.Second, func() bool {
		l = tools.NodeList{}
		apiOK(t, op, "terminal_list", nil, &l)
		attached := false
		for _, n := range l.Terminals {
			attached = attached || (n.Terminal == watched && n.Clients == 1)
		}
		return attached
	}) {
		t.Fatalf("the human client never attached: %+v", l)
	}
	res := apiFail(t, s.session(asker), "dialog_request", apiM{"kind": "permission", "title": "Bash: make #deploy", "timeout_ms": 60000, "wait_ms": 20}, tools.KindTimeout)
	// It names the binding that answers from there (CONTRACT §18).
	want := asker + " asks: Bash: make #deploy (" + tools.DefaultAnswerKey + " answers here, or termsprawl answer " + res.Details["dialog"].(string) + " allow|deny)"
	var pane string
	if !testenv.Until(20*time.Second, func() bool {
		pane, _ = outer.Cmd("capture-pane", "-p", "-t", "=human:")
		return strings.Contains(pane, want)
	}) {
		t.Fatalf("the human's screen lacks %q:\n%s", want, pane)
	}
	// The agent's own notification a few seconds later ("Claude needs your
	// permission") does not replace that line with one that lacks the
	// dialog's id and the answer key (issue 39 item 6): a later line from
	// another node shows, the vaguer one never does.
	apiOK(t, s.session(asker), "agent_report", apiM{"event": "Notification", "message": "Claude needs your permission to use Bash"}, nil)
	apiFail(t, s.session(watched), "dialog_request", apiM{"kind": "permission", "title": "sentinel", "timeout_ms": 60000, "wait_ms": 20}, tools.KindTimeout)
	var msgs string
	testenv.Eventually(t, 20*time.Second, func() bool {
		msgs = tmux.Must("show-messages")
		if strings.Contains(msgs, "is waiting for you") {
			t.Fatalf("the dialog's line was replaced by a vaguer one:\n%s", msgs)
		}
		return strings.Contains(msgs, "sentinel")
	}, func() string { return "the sentinel dialog's line never showed:\n" + msgs })
}
