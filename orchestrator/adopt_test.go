package orchestrator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// A close interrupted by a crash leaves remain-on-exit off; adoption turns
// it back on, so the program's later exit shows as exited, not vanished.
func TestAdoptRestoresRemainOnExit(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	dir := o.StateDir()
	id := launch(t, o, "sh", "-c", "echo up; read x; exit 7")
	waitText(t, o, id, "up")
	o.Close()
	srv.Must("set-option", "-p", "-t", "=ts-"+id+":", "remain-on-exit", "off")
	o2 := openOrchestrator(t, srv, dir)
	srv.Must("send-keys", "-t", "=ts-"+id+":", "Enter")
	r, err := o2.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 20000})
	if err != nil || !r.Matched || r.ExitCode == nil || *r.ExitCode != 7 {
		t.Fatalf("exit after adoption: %+v, %v", r, err)
	}
	if _, err := o2.Snapshot(context.Background(), id); err != nil {
		t.Fatalf("the exited node vanished: %v", err)
	}
}

// Temporary files of writes that a killed orchestrator never finished are
// removed by the next one; node files stay.
func TestAdoptRemovesStaleTemps(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	dir := o.StateDir()
	id := launch(t, o, "cat")
	o.Close()
	temps := []string{
		filepath.Join(dir, nodesDir, "."+id+".json.tmp-123"),
		filepath.Join(filepath.Dir(tools.SessionPath(dir, id)), "."+id+".json.tmp-456"),
	}
	for _, p := range temps {
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o2 := openOrchestrator(t, srv, dir)
	for _, p := range temps {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
	if _, err := o2.Snapshot(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{o2.metaPath(id), tools.SessionPath(dir, id)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("node file %s: %v", p, err)
		}
	}
}

// Adoption never treats an untrustworthy session list as "there are
// none": a node file whose session tmux may still run is kept.
func TestAdoptKeepsFilesOfSessionsItCannotRuleOut(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	dir := o.StateDir()
	id := launch(t, o, "cat")
	o.Close()
	// A node file with no session at all is forgotten...
	stale := NodeMeta{ID: "ghost", Name: "ghost", Owner: tools.OperatorNode}
	if err := tools.WriteJSONAtomic(filepath.Join(dir, nodesDir, "ghost.json"), stale); err != nil {
		t.Fatal(err)
	}
	o2 := openOrchestrator(t, srv, dir)
	if _, err := os.Stat(filepath.Join(dir, nodesDir, "ghost.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file of a node without a session was kept: %v", err)
	}
	// ...and a live one is adopted with its files.
	if _, err := o2.Snapshot(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if !o2.sessionGone(tctx(t), NodeMeta{ID: "ghost"}) || o2.sessionGone(tctx(t), NodeMeta{ID: id}) {
		t.Fatal("sessionGone is wrong about which session exists")
	}
}

// An empty answer to list-sessions (tmux 3.3a once gave one, a reply block
// meant for another command) is not "no sessions": the orchestrator
// refuses to start, and every node file stays.
func TestAdoptRefusesAnUntrustworthyList(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	dir := o.StateDir()
	id := launch(t, o, "cat")
	o.Close()
	if _, err := New(tctx(t), Config{StateDir: dir, Socket: srv.Socket, hooks: &hooks{listSessions: func([]string) []string { return nil }}}); err == nil {
		t.Fatal("New adopted from an empty session list")
	}
	for _, p := range []string{filepath.Join(dir, nodesDir, id+".json"), tools.SessionPath(dir, id)} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("node file %s lost: %v", p, err)
		}
	}
	o2 := openOrchestrator(t, srv, dir)
	if _, err := o2.Snapshot(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

// A human's `detach-client -s` also detaches our control client: the node
// is mirrored again, never forgotten while its session lives.
func TestDetachedMirrorAttachesAgain(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	id := launch(t, o, "sh", "-c", "echo first; exec cat")
	waitText(t, o, id, "first")
	before, _ := o.Snapshot(context.Background(), id)
	detachOurClient(t, srv)
	// Wait until the new mirror replaced the old one.
	var n *node.Node
	if !testenv.Until(20*time.Second, func() bool {
		n = o.node(id)
		if n != nil && n.Meta.Epoch > 0 && !n.IsClosing() {
			return true
		}
		return false
	}) {
		t.Fatalf("the node was not mirrored again (node %v)", n)
	}
	if _, err := os.Stat(tools.SessionPath(o.StateDir(), id)); err != nil {
		t.Fatalf("the node's session file: %v", err)
	}
	r, err := o.Submit(tctx(t), id, "again", &tools.WaitSpec{Wait: tools.WaitText, Text: "again", TimeoutMS: 10000})
	if err != nil || r.Wait == nil || !r.Wait.Matched {
		t.Fatalf("input after the re-attach: %+v %v", r, err)
	}
	if after, _ := o.Snapshot(context.Background(), id); after.Revision <= before.Revision {
		t.Fatalf("revision went from %d to %d", before.Revision, after.Revision)
	}
}
