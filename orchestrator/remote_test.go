package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/sshtest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/tools"
)

// hostSpec is the fixture's alias as a host named name.
func hostSpec(f *sshtest.Fixture, name, alias string) tools.HostSpec {
	return tools.HostSpec{Name: name, Dest: alias, SSHOptions: f.SSHOptions(), Socket: f.RemoteSocket, RemoteDir: f.RemoteDir(name)}
}

// remoteOrchestrator is an orchestrator whose hosts are the fixture's
// aliases given as name=alias.
func remoteOrchestrator(t *testing.T, f *sshtest.Fixture, srv *tmuxtest.Server, dir string, hosts ...string) *Orchestrator {
	t.Helper()
	return remoteOrchestratorHooks(t, f, srv, dir, nil, hosts...)
}

// remoteOrchestratorHooks is remoteOrchestrator with test hooks h set from
// the start (they see the first connection and adoption).
func remoteOrchestratorHooks(t *testing.T, f *sshtest.Fixture, srv *tmuxtest.Server, dir string, h *hooks, hosts ...string) *Orchestrator {
	t.Helper()
	var specs []tools.HostSpec
	for _, h := range hosts {
		name, alias, _ := strings.Cut(h, "=")
		specs = append(specs, hostSpec(f, name, alias))
	}
	return openOrchestratorWith(t, srv, dir, func(c *Config) { c.Hosts = specs; c.hooks = h })
}

func newRemote(t *testing.T, hosts ...string) (*Orchestrator, *sshtest.Fixture, *tmuxtest.Server, string) {
	t.Helper()
	return newRemoteHooks(t, nil, hosts...)
}

// newRemoteHooks is newRemote with test hooks h set from the start.
func newRemoteHooks(t *testing.T, h *hooks, hosts ...string) (*Orchestrator, *sshtest.Fixture, *tmuxtest.Server, string) {
	t.Helper()
	f := sshtest.New(t)
	srv := tmuxtest.New(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	return remoteOrchestratorHooks(t, f, srv, dir, h, hosts...), f, srv, dir
}

func remoteLaunch(t *testing.T, o *Orchestrator, host string, argv ...string) string {
	t.Helper()
	info, err := o.Launch(tctx(t), LaunchSpec{Command: argv, Host: host, Columns: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	if info.Host != host {
		t.Fatalf("launch info host %q, want %q", info.Host, host)
	}
	return info.Terminal
}

// A node on the host runs inside the namespace, is driven like a local
// one, and its snapshot is what the remote tmux server has.
func TestRemoteLaunchDrive(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 6 s on a loaded 2-core machine")
	t.Parallel()
	o, f, _, _ := newRemote(t, "big="+sshtest.Good)
	id := remoteLaunch(t, o, "big", bashArgv()...)
	wait := &tools.WaitSpec{Wait: tools.WaitText, Text: f.HostIP + "/30", TimeoutMS: 20000}
	res, err := o.Submit(tctx(t), id, "ip -4 -o addr show", wait)
	if err != nil || res.Wait == nil || !res.Wait.Matched {
		snap, _ := o.Snapshot(context.Background(), id)
		t.Fatalf("submit: %+v %v\n%s", res, err, strings.Join(snap.Lines, "\n"))
	}
	quiet := &tools.WaitSpec{Wait: tools.WaitQuiet, QuietMS: 300, TimeoutMS: 20000}
	if _, err := o.Submit(tctx(t), id, "echo done-$((6*7))", &tools.WaitSpec{Wait: tools.WaitText, Text: "done-42", TimeoutMS: 20000}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.WaitFor(tctx(t), id, *quiet); err != nil {
		t.Fatal(err)
	}
	snap, err := o.Snapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	screen := strings.Join(snap.Lines, "\n")
	if strings.Contains(screen, f.LocalIP+"/30") {
		t.Fatalf("the program saw this side's address: it runs outside the namespace\n%s", screen)
	}
	out, err := f.Tmux("capture-pane", "-p", "-t", "=ts-"+id+":")
	if err != nil {
		t.Fatalf("capture-pane on the remote server: %v: %s", err, out)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	got := strings.TrimRight(screen, "\n")
	if want := strings.TrimRight(strings.Join(lines, "\n"), "\n"); got != want {
		t.Fatalf("snapshot differs from the remote capture-pane:\n--- snapshot\n%s\n--- capture-pane\n%s", got, want)
	}
	list := o.List(tctx(t))
	if len(list) != 1 || list[0].Host != "big" || list[0].TmuxSocket != f.RemoteSocket {
		t.Fatalf("list: %+v", list)
	}
}

// An unknown host name is a usage error naming the known ones; nothing is
// made.
func TestRemoteUnknownHost(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 4 s on a loaded 2-core machine")
	t.Parallel()
	o, _, _, dir := newRemote(t, "big="+sshtest.Good)
	_, err := o.Launch(tctx(t), LaunchSpec{Command: bashArgv(), Host: "small"})
	var te *tools.Error
	if !errors.As(err, &te) || te.Kind != tools.KindUsage || !strings.Contains(te.Msg, `no host "small" (known hosts: big)`) {
		t.Fatalf("unknown host: %v", err)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, nodesDir, "*")); len(files) != 0 {
		t.Fatalf("files made: %v", files)
	}
}

// A node on a host is recorded like a local one (the cast holds its
// output), and capture_since works on its mirror.
func TestRemoteRecordAndCapture(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 5 s on a loaded 2-core machine")
	t.Parallel()
	o, _, _, _ := newRemote(t, "big="+sshtest.Good)
	info, err := o.Launch(tctx(t), LaunchSpec{Command: bashArgv(), Host: "big", Columns: 80, Rows: 24, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	id := info.Terminal
	res, err := o.Submit(tctx(t), id, "echo rec-$((3*3))", &tools.WaitSpec{Wait: tools.WaitText, Text: "rec-9", TimeoutMS: 20000})
	if err != nil || res.Wait == nil || !res.Wait.Matched {
		t.Fatalf("submit: %+v %v", res, err)
	}
	ch, err := o.CaptureSince(context.Background(), id, res.Revision)
	if err != nil || len(ch.Rows) == 0 || !strings.Contains(fmt.Sprint(ch.Rows), "rec-9") {
		t.Fatalf("capture_since: %+v %v", ch, err)
	}
	rr, err := o.Record(tctx(t), id, false)
	if err != nil || rr.Path == "" {
		t.Fatalf("stop recording: %+v %v", rr, err)
	}
	cast, err := os.ReadFile(filepath.Join(rr.Path, "session.cast"))
	if err != nil || !strings.Contains(string(cast), "rec-9") {
		t.Fatalf("cast at %s: %v\n%s", rr.Path, err, cast)
	}
}

// An agent on a host is wired with the host's termsprawlctl: the MCP
// registration is written there, and the node's environment names the
// remote session file, home, ctl and host.
func TestRemoteAgentWiring(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 6 s on a loaded 2-core machine")
	t.Parallel()
	f := sshtest.New(t)
	srv := tmuxtest.New(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	ctl := writeScript(t, "termsprawlctl", "#!/bin/sh\necho fake ctl\n")
	spec := hostSpec(f, "big", sshtest.Good)
	spec.Ctl = ctl
	o := openOrchestratorWith(t, srv, dir, func(c *Config) { c.Hosts = []tools.HostSpec{spec} })
	gotCtl, mcp, err := o.HostAgentConfig(tctx(t), "big")
	if err != nil || gotCtl != ctl || mcp != f.RemoteDir("big")+"/agent-tools/mcp.json" {
		t.Fatalf("agent config: %q %q %v", gotCtl, mcp, err)
	}
	b, err := os.ReadFile(mcp)
	if err != nil || !strings.Contains(string(b), `"command": "`+ctl+`"`) {
		t.Fatalf("registration on the host: %v\n%s", err, b)
	}
	info, err := o.Launch(tctx(t), LaunchSpec{Command: bashArgv(), Host: "big", Agent: "custom"})
	if err != nil {
		t.Fatal(err)
	}
	id := info.Terminal
	want := "/sessions/" + id + ".json|" + f.RemoteDir("big") + "|" + ctl + "|big|" + filepath.Dir(ctl)
	if _, err := o.Submit(tctx(t), id, `echo "$TERMSPRAWL_SESSION_FILE|$TERMSPRAWL_HOME|$TERMSPRAWL_CTL|$TERMSPRAWL_HOST|${PATH%%:*}"`,
		&tools.WaitSpec{Wait: tools.WaitText, Text: want, TimeoutMS: 20000}); err != nil {
		snap, _ := o.Snapshot(context.Background(), id)
		t.Fatalf("environment: %v\n%s", err, strings.Join(snap.Lines, "\n"))
	}
	s, err := tools.ReadSession(hosts.SessionPath(f.RemoteDir("big"), id))
	local, lerr := tools.ReadSession(tools.SessionPath(dir, id))
	if err != nil || lerr != nil || s.Token != local.Token || s.Node != id || s.Socket != f.RemoteSocket {
		t.Fatalf("remote session file %+v (%v), local %+v (%v)", s, err, local, lerr)
	}
	fi, err := os.Stat(hosts.SessionPath(f.RemoteDir("big"), id))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("remote session file mode: %v %v", fi.Mode(), err)
	}
}
