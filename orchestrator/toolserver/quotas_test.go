package toolserver

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

func wantQuota(t *testing.T, res tools.Result, quota string) {
	t.Helper()
	if res.OK || res.Kind != tools.KindRejected || res.Details["quota"] != quota || !strings.Contains(res.Error, "quota") {
		t.Fatalf("want a rejected %s quota error, got %s", quota, apiRes(res))
	}
}

// One node cannot lock the others out of watches, dialogs or tasks.
func TestPerNodeQuotas(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 5 s on a loaded 2-core machine")
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	greedy := apiLaunchNamed(t, op, "greedy", "", "cat")
	other := apiLaunchNamed(t, op, "other", "", "cat")
	sg, so := s.session(greedy), s.session(other)

	for range maxWatchesPerNode {
		apiOK(t, sg, "watch_start", apiM{"terminal": greedy, "wait": "exit"}, nil)
	}
	wantQuota(t, apiCall(t, sg, "watch_start", apiM{"terminal": greedy, "wait": "exit"}), "watches")
	apiOK(t, so, "watch_start", apiM{"terminal": other, "wait": "exit"}, nil)
	apiOK(t, op, "watch_start", apiM{"terminal": other, "wait": "exit"}, nil)

	var wg sync.WaitGroup
	for range maxDialogsPerNode {
		wg.Add(1)
		go func() {
			defer wg.Done()
			apiCall(t, sg, "dialog_request", apiM{"kind": "permission", "title": "t", "timeout_ms": 15000})
		}()
	}
	var dl tools.DialogList
	for len(dl.Dialogs) < maxDialogsPerNode {
		apiOK(t, op, "dialog_list", nil, &dl)
	}
	wantQuota(t, apiCall(t, sg, "dialog_request", apiM{"kind": "permission", "title": "t", "timeout_ms": 100}), "dialogs")
	var otherOut tools.DialogOutcome
	if apiOK(t, so, "dialog_request", apiM{"kind": "permission", "title": "t", "timeout_ms": 100}, &otherOut); !otherOut.TimedOut || otherOut.Answer.Mode != tools.AnswerDeny {
		t.Fatalf("another node's dialog should open and time out as a deny: %+v", otherOut)
	}
	for _, d := range dl.Dialogs {
		apiMutate(t, op, "dialog_answer", apiM{"dialog": d.ID, "mode": "deny"})
	}
	wg.Wait()

	old := maxTasksPerSender
	maxTasksPerSender = 2
	t.Cleanup(func() { maxTasksPerSender = old })
	// Each node may send tasks to itself (it may drive itself).
	for i := range maxTasksPerSender {
		apiMutate(t, sg, "agent_send", apiM{"node": greedy, "text": fmt.Sprint("task ", i), "message_id": fmt.Sprint("m", i)})
	}
	wantQuota(t, apiCall(t, sg, "agent_send", apiM{"node": greedy, "text": "one more", "message_id": "mx"}), "tasks")
	apiMutate(t, so, "agent_send", apiM{"node": other, "text": "mine", "message_id": "m0"})
}
