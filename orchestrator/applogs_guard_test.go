//go:build unix

package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// A FIFO at a followed log path when the orchestrator adopts its node
// does not hold the adoption: New returns, the node is served and its log
// is missing.
func TestAppLogsFIFOAtAdoption(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	dir := o.StateDir()
	p := filepath.Join(t.TempDir(), "app.log")
	os.WriteFile(p, nil, 0o600)
	id := launchWithLogs(t, o, tools.LogSpec{Path: p, Label: "app"})
	o.Close()
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		testenv.SkipOrFail(t, "cannot make a FIFO: %v", err)
	}
	unblock := func() {
		if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
	t.Cleanup(unblock)
	type opened struct {
		o   *Orchestrator
		err error
	}
	done := make(chan opened, 1)
	go func() {
		o2, err := New(context.Background(), Config{StateDir: dir, Socket: srv.Socket, LaunchWatch: -1})
		done <- opened{o2, err}
	}()
	var o2 *Orchestrator
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		o2 = r.o
		t.Cleanup(o2.Close)
	case <-time.After(30 * time.Second):
		unblock()
		if r := <-done; r.o != nil {
			r.o.Close()
		}
		t.Fatal("adoption blocked on a FIFO at a followed log path")
	}
	n := o2.node(id)
	if n == nil || n.TW.Logs == nil {
		t.Fatalf("node %s not adopted with its logs", id)
	}
	deadline := time.After(20 * time.Second)
	for {
		changed := n.TW.Logs.Changed()
		caps, err := o2.Capabilities(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(caps.LogsMissing, ",") == "app" {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the FIFO log is not reported missing: %+v", caps)
		}
	}
	if _, err := o2.Snapshot(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

// A followed log path that later becomes a link to another node's
// session file is not read: the token never reaches a capture.
func TestAppLogsPathBecomesSessionFile(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 4 s on a loaded 2-core machine")
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	victim := launch(t, o, "sleep", "600")
	dir := t.TempDir()
	p := filepath.Join(dir, "app.log")
	os.WriteFile(p, nil, 0o600)
	id := launchWithLogs(t, o, tools.LogSpec{Path: p, Label: "app"})
	sess, err := tools.ReadSession(tools.SessionPath(o.StateDir(), victim))
	if err != nil || sess.Token == "" {
		t.Fatalf("victim's session: %+v %v", sess, err)
	}
	cur := node.RevisionBase(o.node(id).Meta.Epoch)
	appendFile(t, p, "ordinary\n")
	cur = logsUntil(t, o, id, cur, hasLines("app: ordinary")).Revision
	tmp := filepath.Join(dir, "swap")
	if err := os.Symlink(tools.SessionPath(o.StateDir(), victim), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	n := o.node(id)
	deadline := time.After(20 * time.Second)
	for {
		changed := n.TW.Logs.Changed()
		ch, err := o.CaptureSince(context.Background(), id, cur)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ch.Logs {
			if strings.Contains(l.Line, sess.Token) {
				t.Fatalf("another node's token leaked through the log: %q", l.Line)
			}
		}
		if caps, _ := o.Capabilities(context.Background(), id); strings.Join(caps.LogsMissing, ",") == "app" {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the swapped log was neither refused nor read")
		}
	}
}
