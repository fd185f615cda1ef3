package tables

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// agents.json, encoded a state at a time, decodes to the table as a
// whole encoding of it does, through changes, removals and tasks.
func TestAgentsSnapshotMatchesTable(t *testing.T) {
	t.Parallel()
	tab := NewAgents(nil)
	check := func(when string) {
		t.Helper()
		tab.mu.Lock()
		whole := agentsOnDisk{Next: tab.next, States: tab.states, Tasks: []*task{}}
		for _, tk := range tab.tasks {
			whole.Tasks = append(whole.Tasks, tk)
		}
		want, err := json.Marshal(whole)
		tab.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		got, err := tab.snapshot()
		if err != nil {
			t.Fatal(err)
		}
		var g, w agentsOnDisk
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %v\n%s", when, err, got)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: agents.json decodes to\n%+v\nthe table is\n%+v", when, g, w)
		}
	}
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	state := func(s string, n int) AgentState {
		st := AgentState{State: s, Message: "m " + s, Updated: at, Incarnation: "inc", Since: at}
		for i := range n {
			st.Evidence = append(st.Evidence, tools.Evidence{Source: tools.SourceHook, Event: "Stop", At: strconv.Itoa(i)})
		}
		return st
	}
	tab.mu.Lock()
	tab.setLocked("a", state("idle", 3))
	tab.setLocked("b", state("working", 1))
	tab.setLocked("c", state("waiting", 0))
	tab.mu.Unlock()
	check("three states")
	check("nothing changed")
	tab.mu.Lock()
	tab.setLocked("a", state("working", 4))
	tab.deleteLocked("b")
	tab.setLocked("d\"quoted", state("idle", 2))
	tab.next = 7
	tab.tasks["task-7"] = &task{Task: tools.Task{ID: "task-7", From: "a", To: "c", Text: "go", State: tools.TaskPending, Created: at}, FromInc: "inc", ToInc: "inc"}
	tab.mu.Unlock()
	check("a changed, b gone, d new, a task")
	tab.mu.Lock()
	tab.tasks["task-7"].State = tools.TaskCompleted
	tab.mu.Unlock()
	check("a task replied")
}

// agents.json written by the table loads back into the same bytes; a
// dead incarnation's state and tasks are dropped.
func TestAgentsFileRoundTrip(t *testing.T) {
	t.Parallel()
	st, _ := testStore(t)
	tab := NewAgents(st)
	at := time.Date(2126, 12, 1, 10, 0, 0, 0, time.UTC)
	tab.Update("n1", func(AgentState, bool) AgentState {
		return AgentState{State: tools.AgentIdle, Message: "done", Updated: at, AcceptsTasks: true, Incarnation: "n1-life", Since: at,
			Evidence: []tools.Evidence{{Source: tools.SourceHook, Event: "Stop", At: "x"}}}
	})
	tab.Update("gone", func(AgentState, bool) AgentState {
		return AgentState{State: tools.AgentWorking, Incarnation: "gone-life"}
	})
	caller := tools.Identity{Node: "n1", Role: tools.RoleAgent, Incarnation: "n1-life"}
	id, _, err := tab.SendTask(t.Context(), caller, "n1", "n1-life", "review", "m1", 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Reply(t.Context(), caller, id, "ok", tools.TaskCompleted); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tab.SendTask(t.Context(), caller, "gone", "gone-life", "x", "m2", 8); err != nil {
		t.Fatal(err)
	}
	tab.Persister().Close()

	again := NewAgents(st)
	defer again.Persister().Close()
	if err := again.Restore(st, map[string]bool{"n1-life": true}); err != nil {
		t.Fatal(err)
	}
	if _, ok := again.State("gone"); ok {
		t.Fatal("a dead incarnation's state was restored")
	}
	got, err := again.Task(id)
	if err != nil || got.Reply != "ok" {
		t.Fatalf("the replied task after restore: %+v %v", got, err)
	}
	if _, err := again.Task("task-2"); tools.KindOf(err) != tools.KindNotFound {
		t.Fatalf("a task to a dead incarnation after restore: %v", err)
	}
	tab.mu.Lock()
	tab.deleteLocked("gone")
	for tid, tk := range tab.tasks {
		if tk.ToInc == "gone-life" {
			delete(tab.tasks, tid)
		}
	}
	tab.mu.Unlock()
	want, _ := tab.snapshot()
	b, _ := again.snapshot()
	if string(b) != string(want) {
		t.Fatalf("restored table writes\n%s\nwant\n%s", b, want)
	}
	if id, dup, _ := again.SendTask(t.Context(), caller, "n1", "n1-life", "review", "m1", 8); !dup || id != got.ID {
		t.Fatalf("the same message id after restore: %s dup %v, want %s dup", id, dup, got.ID)
	}
}
