package orchestrator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/launchenv"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// Closing every node of the shards after the first lets their servers
// exit: no server besides the first answers, and only the first's two
// control clients (admin, waiter) remain.
func TestEmptyShardsAreReclaimed(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 7 s on a loaded 2-core machine")
	t.Parallel()
	srv, dir := newTestServer(t)
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.ShardSize = 2 })
	ctx := tctx(t)
	var ids []string
	for range 6 { // three shards
		ids = append(ids, launch(t, o, stayArgv()...))
	}
	var sockets []string
	for _, s := range o.shards.List() {
		sockets = append(sockets, s.Socket())
	}
	if len(sockets) != 3 {
		t.Fatalf("%d shards for 6 nodes of 2, want 3: %q", len(sockets), sockets)
	}
	for _, id := range ids {
		if err := o.CloseNode(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(o.shards.List()); n != 1 {
		t.Fatalf("%d shards after closing every node, want 1", n)
	}
	for _, s := range sockets[1:] {
		if hosts.Running(ctx, "tmux", s, launchenv.Minimal()) {
			t.Fatalf("shard %s still answers after its last node closed", s)
		}
	}
	if !hosts.Running(ctx, "tmux", sockets[0], launchenv.Minimal()) {
		t.Fatal("the first shard ended too")
	}
	kids := tmuxControlChildrenOf(srv.Socket)
	for _, k := range kids {
		for _, s := range sockets[1:] {
			if strings.Contains(k, " "+s+" ") {
				t.Fatalf("a control client of reclaimed shard %s remains: %q", s, k)
			}
		}
	}
	if len(kids) != shardClients {
		t.Fatalf("%d control clients, want the first shard's admin, waiter and mirror: %q", len(kids), kids)
	}
	// A new launch after the reclaim starts a shard again when needed.
	for range 3 {
		launch(t, o, stayArgv()...)
	}
	if n := len(o.shards.List()); n != 2 {
		t.Fatalf("%d shards for 3 nodes of 2, want 2", n)
	}
}

// A launch whose caller gave up before the node was registered is rolled
// back: no node, no files, no session, nothing running.
func TestLaunchRolledBackWhenCallerGaveUp(t *testing.T) {
	t.Parallel()
	srv, dir := newTestServer(t)
	o := openOrchestrator(t, srv, dir)
	ctx, cancel := context.WithCancel(tctx(t))
	var hooked string
	o.hooks.beforeRegister = func(id string) { hooked = id; cancel() }
	_, err := o.Launch(ctx, LaunchSpec{Command: stayArgv(), Cwd: t.TempDir(), Name: "gaveup"})
	o.hooks.beforeRegister = nil
	var te *tools.Error
	if err == nil || !errors.As(err, &te) || te.Kind != tools.KindNotRun {
		t.Fatalf("launch after its caller gave up: %v, want not_run", err)
	}
	if hooked == "" {
		t.Fatal("the hook never ran")
	}
	if _, ok := o.Meta(hooked); ok || len(o.Nodes()) != 0 {
		t.Fatalf("node %s registered after its caller gave up: %+v", hooked, o.Nodes())
	}
	if _, err := srv.Cmd("has-session", "-t", "=ts-"+hooked); err == nil {
		t.Fatalf("session ts-%s still runs", hooked)
	}
	if _, err := statefile.ReadMeta(o.cfg.StateDir, hooked); err == nil {
		t.Fatal("its metadata file is left")
	}
	testenv.Until(5*time.Second, func() bool { return len(tmuxControlChildrenOf(srv.Socket)) <= shardClients })
	if kids := tmuxControlChildrenOf(srv.Socket); len(kids) != shardClients {
		t.Fatalf("control clients left: %q", kids)
	}
}
