package orchestrator_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// Nodes are spread over shards of ShardSize per tmux server: a crash of
// one server takes only its nodes, the others keep running and serving,
// and a restart adopts every shard.
func TestShardsLimitTheBlastRadius(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 6 s on a loaded 2-core machine")
	t.Parallel()
	srv := tmuxtest.New(t) // its cleanup also ends the SOCKET-N shards
	dir := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	cfg := func(c *orchestrator.Config) { c.ShardSize = 2 }
	o := orchestrator.OpenOrchestratorWith(t, srv, dir, cfg)
	for range 5 {
		orchestrator.LaunchForTest(t, o, "sh", "-c", "echo up; exec cat")
	}
	sockets := map[string][]string{}
	for _, n := range o.List(orchestrator.TestContext(t)) {
		sockets[n.TmuxSocket] = append(sockets[n.TmuxSocket], n.Terminal)
	}
	if len(sockets) != 3 || len(sockets[srv.Socket]) != 2 || len(sockets[srv.Socket+"-2"]) != 2 || len(sockets[srv.Socket+"-3"]) != 1 {
		t.Fatalf("nodes per shard: %v", sockets)
	}
	// Kill the second shard's server: only its two nodes are lost.
	shard2 := &tmuxtest.Server{Socket: srv.Socket + "-2"}
	lost := sockets[shard2.Socket]
	if _, err := shard2.Cmd("kill-server"); err != nil {
		t.Fatal(err)
	}
	// Listed lost at once (CONTRACT §26): a wait on one says so.
	for _, id := range lost {
		var err error
		testenv.Eventually(t, 20*time.Second, func() bool {
			_, err = o.WaitFor(orchestrator.TestContext(t), id, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 20000})
			return err != nil && strings.Contains(err.Error(), "is lost")
		}, func() string { return fmt.Sprintf("node %s of the killed shard: %v, want lost", id, err) })
	}
	for _, n := range o.List(orchestrator.TestContext(t)) {
		wantLost := n.TmuxSocket == shard2.Socket
		if (n.Status == tools.StatusLost) != wantLost {
			t.Errorf("node %s on %s is %s", n.Terminal, n.TmuxSocket, n.Status)
		}
	}
	if deaths, _ := o.ServerHealth(); deaths != 1 {
		t.Fatalf("server deaths %d, want 1", deaths)
	}
	survivor := sockets[srv.Socket+"-3"][0]
	if _, err := o.Submit(orchestrator.TestContext(t), survivor, "still-here", &tools.WaitSpec{Wait: tools.WaitText, Text: "still-here", TimeoutMS: 10000}); err != nil {
		t.Fatal(err)
	}
	// A restart adopts the live shards' nodes and forgets the lost ones.
	for _, id := range lost {
		if err := o.CloseNode(orchestrator.TestContext(t), id); err != nil {
			t.Fatal(err)
		}
	}
	o.Close()
	o2 := orchestrator.OpenOrchestratorWith(t, srv, dir, cfg)
	if got := len(o2.List(orchestrator.TestContext(t))); got != 3 {
		t.Fatalf("%d nodes adopted after the restart, want 3", got)
	}
	if _, err := o2.Snapshot(context.Background(), survivor); err != nil {
		t.Fatal(err)
	}
	// New launches fill the free places first.
	id := orchestrator.LaunchForTest(t, o2, "cat")
	if m, _ := o2.Meta(id); m.Socket != srv.Socket+"-3" {
		t.Errorf("the new node went to %s, not to the shard with room (%s-3)", m.Socket, srv.Socket)
	}
	count := map[string]int{}
	for _, n := range o2.List(orchestrator.TestContext(t)) {
		count[n.TmuxSocket]++
	}
	for s, c := range count {
		if c > 2 {
			t.Fatalf("shard %s holds %d nodes, over the size 2", s, c)
		}
	}
}
