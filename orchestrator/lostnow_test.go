package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// A node's tmux server killed while termsprawl runs (CONTRACT §26): its
// running nodes are listed lost at once, with their last screen and no
// token; one whose program had exited before stays exited with its code;
// a restore works without a restart; and after a restart the exited one
// is still exited, decided from its recorded exit (its saved screen is
// gone), while the restored one runs.
func TestServerDeathWhileRunningListsLost(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	state := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(state); err != nil {
		t.Fatal(err)
	}
	lost := make(chan string, 4)
	o := openOrchestratorWith(t, srv, state, func(c *Config) {
		c.KeepScreens = -1
		c.hooks = &hooks{lost: func(id string) { lost <- id }}
	})
	dir := t.TempDir()
	info, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"sh", "-c", "echo alive-a; exec cat"}, Name: "a", Cwd: dir, Columns: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	a := info.Terminal
	d := launch(t, o, "sh", "-c", "echo done-d; exit 3")
	waitText(t, o, a, "alive-a")
	if _, err := o.WaitFor(tctx(t), d, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 20000}); err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(srv.Must("display-message", "-p", "#{pid}")))
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case <-lost:
		case <-time.After(30 * time.Second):
			t.Fatal("the nodes of a killed tmux server were never listed lost")
		}
	}
	t.Logf("listed lost %s after the kill", time.Since(killed))
	status := map[string]tools.NodeInfo{}
	for _, n := range o.List(tctx(t)) {
		status[n.Terminal] = n
	}
	if n := status[a]; n.Status != tools.StatusLost || n.SavedAt == "" {
		t.Errorf("the running node after its server died: %+v, want lost with a saved screen", n)
	}
	if n := status[d]; n.Status != tools.StatusExited || n.ExitCode == nil || *n.ExitCode != 3 {
		t.Errorf("the node that had exited 3: %+v, want exited 3", n)
	}
	snap, err := o.Snapshot(context.Background(), a)
	if err != nil || snap.Status != tools.StatusLost || !strings.Contains(strings.Join(snap.Lines, "\n"), "alive-a") {
		t.Fatalf("the lost node's snapshot: %+v %v", snap, err)
	}
	if _, err := os.Stat(tools.SessionPath(state, a)); !os.IsNotExist(err) {
		t.Errorf("the lost node keeps its session file (its token): %v", err)
	}
	if _, err := o.Restore(tctx(t), d, RestoreOptions{}); kindOf(err) != tools.KindConflict {
		t.Errorf("restore of the exited node: %v", err)
	}

	// Restored without a restart: a new server, the same id and name.
	r, err := o.Restore(tctx(t), a, RestoreOptions{})
	if err != nil {
		t.Fatalf("restore of a node lost while termsprawl ran: %v", err)
	}
	if r.Terminal != a || r.Name != "a" || r.Status != tools.StatusRunning {
		t.Fatalf("restored: %+v", r)
	}
	waitText(t, o, a, "alive-a")

	// After a restart, the exited node is still exited 3 from its recorded
	// exit, though its saved screen is gone.
	o.Close()
	if err := os.Remove(o.screenPath(d)); err != nil {
		t.Fatal(err)
	}
	o2 := openOrchestratorWith(t, srv, state, func(c *Config) { c.KeepScreens = -1 })
	for _, n := range o2.List(tctx(t)) {
		switch n.Terminal {
		case d:
			if n.Status != tools.StatusExited || n.ExitCode == nil || *n.ExitCode != 3 {
				t.Errorf("after a restart the exited node is %+v, want exited 3", n)
			}
		case a:
			if n.Status != tools.StatusRunning {
				t.Errorf("after a restart the restored node is %+v, want running", n)
			}
		}
	}
}
