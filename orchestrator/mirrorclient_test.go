package orchestrator

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/tools"
)

// A shard's nodes share its mirror client (issue 41): however many nodes
// it holds, tmux lists three control clients of ours (admin, waiter,
// mirror); with Config.ClientPerNode, one more per node. Either way every
// node is mirrored and closes cleanly.
func TestShardControlClients(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		perNode bool
	}{{"shared", false}, {"client-per-node", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, dir := newTestServer(t)
			o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.ClientPerNode = tc.perNode })
			var ids []string
			for i := range 3 {
				id := launch(t, o, "sh", "-c", "echo node-"+string(rune('a'+i))+"; exec cat")
				waitText(t, o, id, "node-"+string(rune('a'+i)))
				ids = append(ids, id)
			}
			want := shardClients
			if tc.perNode {
				want = shardClients - 1 + len(ids)
			}
			out := srv.Must("list-clients", "-F", "#{client_control_mode}")
			if got := strings.Count(out, "1"); got != want {
				t.Fatalf("%d control clients for %d nodes, want %d:\n%s", got, len(ids), want, out)
			}
			for _, id := range ids {
				if err := o.CloseNode(tctx(t), id); err != nil {
					t.Fatal(err)
				}
			}
			if out := srv.Must("list-sessions", "-F", "#{session_name}"); strings.Contains(out, "ts-") {
				t.Fatalf("sessions left after closing every node:\n%s", out)
			}
		})
	}
}

// The shard's mirror client process killed (not the server): every node
// of the shard is mirrored again through a new mirror client, none is
// lost or forgotten, and each answers input.
func TestMirrorClientKilled(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	ids := []string{launch(t, o, "cat"), launch(t, o, "cat")}
	out := srv.Must("list-clients", "-t", "="+hosts.MirrorSession, "-F", "#{client_pid}")
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("the mirror client's pid: %q", out)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if !testenv.Until(20*time.Second, func() bool {
			n := o.node(id)
			return n != nil && n.Meta.Epoch > 0 && !n.IsClosing()
		}) {
			t.Fatalf("node %s was not mirrored again", id)
		}
		r, err := o.Submit(tctx(t), id, "again-"+id, &tools.WaitSpec{Wait: tools.WaitText, Text: "again-" + id, TimeoutMS: 10000})
		if err != nil || r.Wait == nil || !r.Wait.Matched {
			t.Fatalf("input to %s after the new mirror client: %+v %v", id, r, err)
		}
	}
	if out := srv.Must("list-clients", "-t", "="+hosts.MirrorSession, "-F", "#{client_pid}"); strings.TrimSpace(out) == strconv.Itoa(pid) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("mirror clients after the kill: %q, want one new one", out)
	}
}
