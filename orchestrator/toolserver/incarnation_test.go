package toolserver

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// apiLaunchNamed launches argv named name as the owner of sess, with an
// optional idempotency key, and returns the node id.
func apiLaunchNamed(t testing.TB, sess, name, key string, argv ...string) string {
	t.Helper()
	args := apiM{"command": argv, "name": name, "columns": 80, "rows": 24, "cwd": t.TempDir()}
	if key != "" {
		args["idempotency_key"] = key
	}
	r, _ := apiMutate(t, sess, "terminal_launch", args)
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil || info.Terminal == "" {
		t.Fatalf("launch result %s: %v", r.Result, err)
	}
	return info.Terminal
}

// Per-node state belongs to one life of a node: a later node that reuses
// the id gains no control, replays no receipt, answers no task and
// inherits no "always" answer; closing a middle node leaves the real
// owner chain intact.
func TestIncarnationsOwnStateAndControl(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	agA := apiLaunchNamed(t, op, "agA", "", "cat")
	agB := apiLaunchNamed(t, op, "agB", "", "cat")

	child := apiLaunchNamed(t, s.session(agA), "childC", "", "cat")
	if child != "childC" {
		t.Fatalf("child id %q", child)
	}
	oldChild := s.session(child)
	grand := apiLaunchNamed(t, oldChild, "grand", "kg", "cat")
	// State of the first childC: a task sent to it, an "always" answer.
	var sent tools.TaskSent
	r, _ := apiMutate(t, s.session(agA), "agent_send", apiM{"node": child, "text": "hello", "message_id": "m1"})
	if err := json.Unmarshal(r.Result, &sent); err != nil || sent.Task == "" {
		t.Fatalf("agent_send: %s", r.Result)
	}
	asked := make(chan tools.Result, 1)
	go func() {
		asked <- apiCall(t, oldChild, "dialog_request", apiM{"kind": "permission", "title": "rm -rf build", "timeout_ms": 20000})
	}()
	var dl tools.DialogList
	for deadline := time.Now().Add(10 * time.Second); len(dl.Dialogs) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the dialog never showed in dialog_list")
		}
		apiOK(t, op, "dialog_list", nil, &dl)
	}
	apiMutate(t, op, "dialog_answer", apiM{"dialog": dl.Dialogs[0].ID, "mode": "always"})
	if res := <-asked; !res.OK {
		t.Fatalf("dialog_request: %s", apiRes(res))
	}

	// agA closes the middle node; agB launches a node that takes its id.
	apiMutate(t, s.session(agA), "terminal_close", apiM{"terminal": child})
	again := apiLaunchNamed(t, s.session(agB), "childC", "", "cat")
	if again != child {
		t.Fatalf("the reused name got id %q, want %q", again, child)
	}
	newChild := s.session(again)

	// Control follows incarnations, not id strings.
	for _, sess := range []string{s.session(agB), newChild} {
		apiFail(t, sess, "terminal_type", apiM{"terminal": grand, "text": "x"}, tools.KindForbidden)
		apiFail(t, sess, "terminal_close", apiM{"terminal": grand}, tools.KindForbidden)
	}
	apiMutate(t, s.session(agA), "terminal_type", apiM{"terminal": grand, "text": "still mine"})

	// No receipt replays for the new life: the same key acts anew.
	other := apiLaunchNamed(t, newChild, "grand", "kg", "cat")
	if other == grand {
		t.Fatalf("the new childC replayed the old childC's receipt (%s)", grand)
	}
	// The old task is gone with its recipient.
	apiFail(t, op, "agent_task", apiM{"task": sent.Task}, tools.KindNotFound)
	apiFail(t, newChild, "agent_reply", apiM{"task": sent.Task, "text": "mine", "state": "completed"}, tools.KindNotFound)
	// The "always" answer died with the first childC.
	var reused tools.DialogOutcome
	apiOK(t, newChild, "dialog_request", apiM{"kind": "permission", "title": "rm -rf build", "timeout_ms": 300}, &reused)
	if reused.Remembered || !reused.TimedOut || reused.Answer.Mode != tools.AnswerDeny {
		t.Fatalf("a new node reusing the id inherited an \"always\" answer: %+v", reused)
	}
}
