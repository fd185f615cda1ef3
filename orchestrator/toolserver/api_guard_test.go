package toolserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// TestAPIAgentSendAndWatchGuards: agent_send cannot be used to type into a
// terminal the caller may not drive, and a watch is its owner's.
func TestAPIAgentSendAndWatchGuards(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	r, _ := apiMutate(t, op, "agent_launch", apiM{"agent": "custom", "command": []string{"cat"}, "name": "alpha"})
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil {
		t.Fatal(err)
	}
	alpha := info.Terminal
	plain := apiLaunch(t, op, "bash", "--norc", "--noprofile")
	sa := s.session(alpha)

	// The operator's plain shell is not an agent: no agent_send into it.
	apiFail(t, sa, "agent_send", apiM{"node": plain, "text": "echo PWNED-$((1+1))", "message_id": "x"}, tools.KindForbidden)
	if screen := apiScreen(t, op, plain); strings.Contains(screen, "PWNED") {
		t.Fatalf("agent_send typed into a terminal the agent may not drive:\n%s", screen)
	}
	// The operator may (it may drive everything).
	apiMutate(t, op, "agent_send", apiM{"node": plain, "text": "echo OK-$((1+1))", "message_id": "y"})
	apiWaitScreen(t, op, plain, "OK-2")

	// A watch belongs to the node that started it.
	var w struct{ Watch string }
	apiOK(t, op, "watch_start", apiM{"terminal": plain, "wait": "text", "text": "never-printed"}, &w)
	apiFail(t, sa, "watch_cancel", apiM{"watch": w.Watch}, tools.KindForbidden)
	apiFail(t, sa, "watch_wait", apiM{"watch": w.Watch, "timeout_ms": 10}, tools.KindForbidden)
	var c struct{ Cancelled bool }
	apiOK(t, op, "watch_cancel", apiM{"watch": w.Watch}, &c)
	if !c.Cancelled {
		t.Fatal("the owner could not cancel its watch")
	}
}
