package orchestrator

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/sshtest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// Hosts that cannot be used: the orchestrator starts anyway, and a launch
// there is refused with an error that names the host, says what ssh said
// and what to do, and leaves nothing behind (no node, no files, no
// session on the remote server). BatchMode: a host that asks for a
// password is refused, never a hang.
func TestRemoteBadHosts(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 9 s on a loaded 2-core machine")
	t.Parallel()
	f := sshtest.New(t)
	o, _, _, dir := func() (*Orchestrator, *sshtest.Fixture, any, string) {
		srv := tmuxtest.New(t)
		dir := filepath.Join(t.TempDir(), "state")
		if err := tools.EnsureStateDir(dir); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		o := remoteOrchestrator(t, f, srv, dir, "refused="+sshtest.Refused, "notmux="+sshtest.NoTmux,
			"changed="+sshtest.Changed, "password="+sshtest.Password, "oldtmux="+sshtest.OldTmux)
		t.Logf("started with five bad hosts in %v", time.Since(start))
		return o, f, srv, dir
	}()
	for _, tc := range []struct {
		host, reason string
		words        []string
	}{
		{"refused", "refused", []string{"host refused", "refused the ssh connection", "Connection refused"}},
		{"notmux", "no-tmux", []string{"host notmux", "has no tmux on its PATH (", "/nonexistent", "install tmux there"}},
		{"changed", "host-key", []string{"host changed", "host key", "ssh-keygen -R"}},
		{"password", "auth", []string{"host password", "BatchMode=yes", "ssh-copy-id", "Permission denied"}},
		{"oldtmux", "old-tmux", []string{"host oldtmux", "has tmux 3.1c (", "oldtmux-bin/tmux", "tmux 3.2 or newer", "upgrade tmux"}},
	} {
		t.Run(tc.host, func(t *testing.T) {
			start := time.Now()
			_, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"sh"}, Host: tc.host})
			var te *tools.Error
			if !errors.As(err, &te) || te.Kind != tools.KindUnavailable || !te.Retryable {
				t.Fatalf("launch on %s: %v (want kind unavailable, retryable)", tc.host, err)
			}
			var he *HostError
			if !errors.As(err, &he) || he.Reason != tc.reason || he.Host != tc.host {
				t.Fatalf("launch on %s: cause %#v, want a HostError with reason %s", tc.host, he, tc.reason)
			}
			for _, w := range tc.words {
				if !strings.Contains(te.Msg, w) {
					t.Errorf("message lacks %q:\n%s", w, te.Msg)
				}
			}
			if te.Details["host"] != tc.host || te.Details["reason"] != tc.reason {
				t.Errorf("details %v", te.Details)
			}
			t.Logf("%s: refused in %v: %s", tc.host, time.Since(start).Round(time.Millisecond), te.Msg)
		})
	}
	if files, _ := filepath.Glob(filepath.Join(dir, nodesDir, "*")); len(files) != 0 {
		t.Fatalf("node files left: %v", files)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "sessions", "*")); len(files) != 0 {
		t.Fatalf("session files left: %v", files)
	}
	if out, err := f.Tmux("list-sessions"); err == nil {
		t.Fatalf("a remote tmux server was started: %s", out)
	}
	for _, h := range o.Hosts() {
		if h.State != HostUnreachable || h.Error == "" {
			t.Errorf("host %s: %+v", h.Name, h)
		}
	}
	for _, h := range []string{"notmux", "oldtmux"} {
		if _, err := os.Stat(f.RemoteDir(h)); err == nil {
			t.Errorf("host %s got a remote dir", h)
		}
	}
}

// A host whose sshd allows only 4 sessions per connection still takes
// many nodes: they share the mirror client (3 sessions in all, and short
// commands one at a time here), all over the one master connection.
func TestRemoteMaxSessions(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 25 s on a loaded 2-core machine")
	t.Parallel()
	o, f, _, dir := newRemote(t, "few="+sshtest.Few)
	var ids []string
	for range 10 {
		info, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"cat"}, Host: "few"})
		if err != nil {
			t.Fatalf("after %d nodes: %v", len(ids), err)
		}
		ids = append(ids, info.Terminal)
	}
	// Every session rode the one master connection: ssh did not open
	// connections of its own.
	ssOut, _ := exec.Command("ss", "-Htn", "state", "established", "dst", f.HostIP).CombinedOutput()
	if n := strings.Count(strings.TrimSpace(string(ssOut)), "\n") + 1; strings.TrimSpace(string(ssOut)) == "" || n != 1 {
		t.Fatalf("%d ssh connections to the host, want 1:\n%s", n, ssOut)
	}
	files, _ := filepath.Glob(filepath.Join(dir, nodesDir, "*.json"))
	files = slices.DeleteFunc(files, func(f string) bool { // the kept launches (lost.go)
		return strings.HasSuffix(f, ".launch.json") || strings.HasSuffix(f, ".screen.json")
	})
	if len(files) != len(ids) {
		t.Fatalf("%d node files for %d nodes", len(files), len(ids))
	}
	out, _ := f.Tmux("list-sessions", "-F", "#{session_name}")
	if n := strings.Count(out, "ts-"); n != len(ids) {
		t.Fatalf("%d remote sessions for %d nodes:\n%s", n, len(ids), out)
	}
	for _, id := range ids {
		if _, err := o.Submit(tctx(t), id, "hi-"+id, &tools.WaitSpec{Wait: tools.WaitText, Text: "hi-" + id + "\n", TimeoutMS: 20000}); err != nil {
			t.Fatal(err)
		}
	}
}
