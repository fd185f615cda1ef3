package toolserver

import (
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// apiStartMax is apiStart with --max-nodes max.
func apiStartMax(t *testing.T, tmux *tmuxtest.Server, dir string, maxNodes int) *apiServe {
	t.Helper()
	return apiStartWith(t, tmux, dir, orchestrator.Config{MaxNodes: maxNodes})
}

// An agent cannot take every slot of --max-nodes: its launches and its
// descendants' are at most a quarter of them, and agents stop short of
// the last ones, which the operator keeps.
func TestAgentNodeQuota(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 19 s on a loaded 2-core machine")
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStartMax(t, tmux, dir, 8) // 2 per agent; 1 kept for the operator
	op := s.op()
	a, b, c := apiLaunch(t, op, "cat"), apiLaunch(t, op, "cat"), apiLaunch(t, op, "cat")
	sa := s.session(a)
	child := apiLaunch(t, sa, "cat")
	// The child's launch counts for a too.
	apiLaunch(t, s.session(child), "cat")
	res := apiFail(t, sa, "terminal_launch", apiM{"command": []string{"cat"}, "cwd": t.TempDir()}, tools.KindRejected)
	if res.Details["quota"] != "nodes" {
		t.Fatalf("a's third node: %s", apiRes(res))
	}
	apiFail(t, s.session(child), "terminal_launch", apiM{"command": []string{"cat"}, "cwd": t.TempDir()}, tools.KindRejected)
	// 5 nodes; b takes 2 more: 7 of 8, the last one is the operator's.
	apiLaunch(t, s.session(b), "cat")
	apiLaunch(t, s.session(b), "cat")
	res = apiFail(t, s.session(c), "terminal_launch", apiM{"command": []string{"cat"}, "cwd": t.TempDir()}, tools.KindRejected)
	if res.Details["quota"] != "nodes" {
		t.Fatalf("c's launch into the operator's room: %s", apiRes(res))
	}
	apiLaunch(t, op, "cat")
	// Closing frees the quota.
	apiMutate(t, op, "terminal_close", apiM{"terminal": child})
	apiMutate(t, op, "terminal_close", apiM{"terminal": c})
	apiLaunch(t, sa, "cat")
}
