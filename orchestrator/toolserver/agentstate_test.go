package toolserver

import (
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// A hook that reported before agent_launch returned keeps its state: the
// launch's "launched" does not overwrite it; a new incarnation of the id
// starts afresh.
func TestLaunchedStateKeepsAnEarlierHook(t *testing.T) {
	a := newAgentTable(nil)
	a.setState("n1", "n1@1", tools.AgentWaiting, "Bash")
	a.initState("n1", "n1@1", tools.AgentWorking, "launched")
	if st := a.states["n1"]; st.State != tools.AgentWaiting || st.Message != "Bash" {
		t.Fatalf("state %+v, want the hook's", st)
	}
	a.initState("n1", "n1@2", tools.AgentWorking, "launched")
	if st := a.states["n1"]; st.State != tools.AgentWorking || st.Incarnation != "n1@2" {
		t.Fatalf("state %+v, want the new incarnation's launched", st)
	}
}
