package orchestrator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/internal/sshtest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// remoteNodes is how many nodes TestRemote64Nodes puts on one host.
const remoteNodes = 64

// 64 nodes on one host over one ssh connection, under sshd's default
// MaxSessions 10: all run, each answers a text wait, and each snapshot is
// the remote tmux's capture-pane. One pass, launched in parallel.
func TestRemote64Nodes(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 21 s on a loaded 2-core machine")
	t.Parallel()
	o, f, _, _ := newRemote(t, "big="+sshtest.Good)
	ids := make([]string, remoteNodes)
	errs := make([]error, remoteNodes)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range remoteNodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The marker is computed, so the echoed command line never
			// matches it.
			argv := []string{"sh", "-c", fmt.Sprintf("echo up-$((%d+1000)); exec cat", i)}
			info, err := o.Launch(tctx(t), LaunchSpec{Command: argv, Host: "big", Columns: 80, Rows: 24})
			ids[i], errs[i] = info.Terminal, err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("launch %d of %d: %v", i, remoteNodes, err)
		}
	}
	launched := time.Since(start)
	// Each node, all at once: its marker, a submit answered by a text
	// wait, then quiet and a snapshot equal to the remote capture-pane.
	check := func(i int, id string) error {
		after := node.RevisionBase(o.node(id).Meta.Epoch)
		if r, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitText, Text: "up-" + strconv.Itoa(1000+i), After: &after, TimeoutMS: 30000}); err != nil || !r.Matched {
			return fmt.Errorf("node %d: marker: %+v %v", i, r, err)
		}
		word := "echo-" + strconv.Itoa(i)
		if r, err := o.Submit(tctx(t), id, word, &tools.WaitSpec{Wait: tools.WaitText, Text: word, TimeoutMS: 30000}); err != nil || r.Wait == nil || !r.Wait.Matched {
			return fmt.Errorf("node %d: submit: %+v %v", i, r, err)
		}
		if _, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitQuiet, QuietMS: 200, TimeoutMS: 30000}); err != nil {
			return fmt.Errorf("node %d: quiet: %v", i, err)
		}
		snap, err := o.Snapshot(context.Background(), id)
		if err != nil {
			return err
		}
		out, err := f.Tmux("capture-pane", "-p", "-t", "=ts-"+id+":")
		if err != nil {
			return fmt.Errorf("capture-pane: %v: %s", err, out)
		}
		if got, want := trimScreen(snap.Lines), trimScreen(strings.Split(out, "\n")); got != want {
			return fmt.Errorf("node %s: snapshot differs from the remote capture-pane:\n--- snapshot\n%s\n--- capture-pane\n%s", id, got, want)
		}
		return nil
	}
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = check(i, id)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d nodes launched in %v, each checked (marker, submit, quiet, snapshot) by %v", remoteNodes, launched.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	running := 0
	for _, n := range o.List(tctx(t)) {
		if n.Status == tools.StatusRunning && n.Host == "big" {
			running++
		}
	}
	if running != remoteNodes {
		t.Fatalf("%d nodes running on the host, want %d", running, remoteNodes)
	}
	// One TCP connection carries everything.
	ssOut, _ := exec.Command("ss", "-Htn", "state", "established", "dst", f.HostIP).CombinedOutput()
	if n := strings.Count(strings.TrimSpace(string(ssOut)), "\n") + 1; strings.TrimSpace(string(ssOut)) == "" || n != 1 {
		t.Fatalf("%d ssh connections to the host, want 1:\n%s", n, ssOut)
	}
	ssh, pss := sshChildrenPSS(t, f.Config)
	if ssh > 1+3 { // the master and the admin, waiter and mirror clients
		t.Fatalf("%d ssh processes for %d remote nodes, want at most 4", ssh, remoteNodes)
	}
	clients, _ := f.Tmux("list-clients", "-F", "#{client_control_mode}")
	serverPID, _ := f.Tmux("display-message", "-p", "#{pid}")
	spid, _ := strconv.Atoi(strings.TrimSpace(serverPID))
	serverPSS, _ := pssKiB(spid)
	t.Logf("%d remote nodes: %d ssh processes here (PSS %d KiB in all, %d KiB a node), one TCP connection; %d control clients on the host; its tmux server's PSS %d KiB (%d KiB a node)",
		remoteNodes, ssh, pss, pss/remoteNodes, strings.Count(clients, "1"), serverPSS, serverPSS/remoteNodes)
}

// trimScreen is a screen's rows without trailing blanks.
func trimScreen(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(l, " ")
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n")
}

// sshChildrenPSS counts this process's ssh children that use the
// ssh_config config (one fixture's, so other tests' ssh processes are
// not counted) and their PSS (KiB).
func sshChildrenPSS(t *testing.T, config string) (count int, pss int64) {
	t.Helper()
	me := strconv.Itoa(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		stat, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.HasPrefix(s[strings.IndexByte(s, '(')+1:], "ssh)") {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[1] != me {
			continue
		}
		cmd, _ := os.ReadFile(d + "/cmdline")
		if !slices.Contains(strings.Split(string(cmd), "\x00"), config) {
			continue
		}
		count++
		pid, _ := strconv.Atoi(filepath.Base(d))
		if k, err := pssKiB(pid); err == nil {
			pss += k
		}
	}
	return count, pss
}

// A node's session killed from outside (a human's kill-session on the
// host): its window, left in the mirror session alone, is killed too and
// the node ends as a session that ended; the other node runs on.
func TestRemoteSessionKilledOutside(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 10 s on a loaded 2-core machine")
	t.Parallel()
	o, f, _, _ := newRemote(t, "big="+sshtest.Good)
	gone := remoteLaunch(t, o, "big", tickArgv...)
	stays := remoteLaunch(t, o, "big", tickArgv...)
	waitText(t, o, gone, "tick 2")
	if out, err := f.Tmux("kill-session", "-t", "=ts-"+gone); err != nil {
		t.Fatalf("kill-session: %v: %s", err, out)
	}
	var l []tools.NodeInfo
	if !testenv.Until(20*time.Second, func() bool { l = o.List(tctx(t)); return len(l) == 1 && l[0].Terminal == stays }) {
		t.Fatalf("list after the kill-session: %+v", l)
	}
	out, err := f.Tmux("list-windows", "-t", "=termsprawl-mirror", "-F", "#{window_id}")
	if err != nil || len(strings.Fields(out)) != 2 {
		t.Fatalf("the mirror session's windows after the kill: %q %v (want its own and the other node's)", out, err)
	}
	waitText(t, o, stays, "tick "+strconv.Itoa(lastTick(t, f, stays)+2))
}
