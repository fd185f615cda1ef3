package toolserver

import (
	"context"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// The feed handles events in order on its own goroutine: post never
// waits for a handler, sync waits for what was posted before it, status
// changes in a row ride on one, and close handles what is left (later
// events by their posters).
func TestEventFeedOrderAndSync(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	entered, release := make(chan struct{}), make(chan struct{})
	first := true
	f := newEventFeed(func(ev engineEvent) {
		if first {
			first = false
			close(entered)
			<-release // the first handler is slow (a full disk)
		}
		mu.Lock()
		got = append(got, string('0'+rune(ev.kind))+ev.node.ID)
		mu.Unlock()
	})
	f.post(engineEvent{kind: eventBorn, node: orchestrator.NodeMeta{ID: "a"}})
	<-entered
	// The poster (the engine) goes on while the handler is blocked.
	f.post(engineEvent{kind: eventGone, node: orchestrator.NodeMeta{ID: "a"}})
	f.post(engineEvent{kind: eventStatus})
	f.post(engineEvent{kind: eventStatus})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.sync(ctx); err == nil {
		t.Fatal("sync returned while the handler was blocked")
	}
	close(release)
	if err := f.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if want := []string{"1a", "2a", "3"}; !equalStrings(got, want) {
		t.Fatalf("handled %q, want %q", got, want)
	}
	mu.Unlock()
	f.close()
	f.close() // twice is fine
	f.post(engineEvent{kind: eventGone, node: orchestrator.NodeMeta{ID: "b"}})
	mu.Lock()
	defer mu.Unlock()
	if got[len(got)-1] != "2b" {
		t.Fatalf("an event after close was not handled by its poster: %q", got)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A node's end does not wait for the tool server's work on it: with that
// work held (the nodeGone seam), the engine's close returns; a call
// after it sees the node's state gone.
func TestNodeGoneOffTheEngineGoroutine(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	o, api := inProcessServer(t, tmux, dir)()
	defer o.Close()
	defer api.Close()
	held, release := make(chan string, 1), make(chan struct{})
	api.hooks.nodeGone = func(id string) {
		held <- id
		<-release
	}
	op := &call{ctx: t.Context(), caller: operatorIdentity, s: api}
	info, err := op.launchFor(orchestrator.LaunchSpec{Command: []string{"cat"}, Agent: "custom", Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := o.Meta(info.Terminal)
	ag := &call{ctx: t.Context(), caller: tools.Identity{Node: info.Terminal, Role: tools.RoleAgent, Incarnation: m.Incarnation()}, s: api}
	if _, err := agentReport(ag, agentReportArgs{Event: "UserPromptSubmit", Message: "go"}); err != nil {
		t.Fatal(err)
	}
	if err := o.CloseNode(t.Context(), info.Terminal); err != nil {
		t.Fatal(err) // returned while the tool server's work on the node is held
	}
	if id := <-held; id != info.Terminal {
		t.Fatalf("gone: %s, want %s", id, info.Terminal)
	}
	close(release)
	opStatus, _ := tools.Lookup("agent_status")
	res := api.Handle(t.Context(), operatorIdentity, opStatus, []byte(`{}`))
	if !res.OK {
		t.Fatalf("agent_status: %+v", res)
	}
	if _, ok := api.agents.StateOfLife(info.Terminal, m.Incarnation()); ok {
		t.Fatal("a call after the node's end still sees its agent state")
	}
}
