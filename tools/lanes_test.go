package tools

import (
	"context"
	"encoding/json"
	"testing"
)

// An agent's heavy calls queue in its own lane; the agents' shared slots
// bound them all; the operator's lane is never taken by agents; a call
// whose context ends stops waiting and leaves no trace.
func TestLanes(t *testing.T) {
	t.Parallel()
	l := NewLanesSized(2, 1, 1)
	a := Identity{Role: RoleAgent, Node: "a", Incarnation: "a1"}
	b := Identity{Role: RoleAgent, Node: "b", Incarnation: "b1"}
	c := Identity{Role: RoleAgent, Node: "c", Incarnation: "c1"}
	op := Identity{Role: RoleOperator}
	ctx := context.Background()
	relA, err := l.Enter(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	// a's second call waits in a's lane.
	second := make(chan func(), 1)
	go func() {
		rel, err := l.Enter(ctx, a)
		if err != nil {
			t.Error(err)
		}
		second <- rel
	}()
	relB, err := l.Enter(ctx, b) // another agent is not behind a's queue
	if err != nil {
		t.Fatal(err)
	}
	// Agents hold both shared slots: c waits, the operator does not.
	cctx, cancel := context.WithCancel(ctx)
	cErr := make(chan error, 1)
	go func() {
		_, err := l.Enter(cctx, c)
		cErr <- err
	}()
	relOp, err := l.Enter(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	relOp()
	cancel()
	if err := <-cErr; err == nil {
		t.Fatal("a cancelled wait entered")
	}
	if n := l.Waiting(c); n != 0 {
		t.Fatalf("c's cancelled call still counts: %d", n)
	}
	relA()
	rel2 := <-second
	if n := l.Waiting(a); n != 1 {
		t.Fatalf("a has %d calls in its lane, want 1", n)
	}
	rel2()
	rel2() // twice: once
	relB()
	if l.Waiting(a) != 0 || l.Waiting(b) != 0 || len(l.agents) != 0 {
		t.Fatalf("slots held after every release: %d agents", len(l.agents))
	}
}

func TestIsHeavy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		op   string
		args string
		want bool
	}{
		{"terminal_list", ``, false},
		{"terminal_snapshot", `{"terminal":"x"}`, false},
		{"terminal_snapshot", `{"terminal":"x","screenshot":true}`, true},
		{"trace_frame_at", `{"trace":"trace-1","screenshot":false}`, true},
		{"trace_open", `{"path":"/x"}`, true},
		{"fleet_search", `{}`, true},
		{"terminal_snapshot", `{"screenshot":"yes"}`, false},
	} {
		if got := IsHeavy(tc.op, json.RawMessage(tc.args)); got != tc.want {
			t.Errorf("IsHeavy(%s, %s) = %v", tc.op, tc.args, got)
		}
	}
}
