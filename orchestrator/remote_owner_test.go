package orchestrator

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/sshtest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// ownedHost is the fixture's good alias as host "big" with no socket
// given: the orchestrator names its remote server for itself. The fixture
// ends that server at cleanup.
func ownedHost(t *testing.T, f *sshtest.Fixture, dir, rdir string) tools.HostSpec {
	spec := tools.HostSpec{Name: "big", Dest: sshtest.Good, SSHOptions: f.SSHOptions(), RemoteDir: rdir}
	f.Track(spec.OwnedSocket(dir))
	return spec
}

// sessionsOn lists the node sessions on the remote server of socket.
func sessionsOn(t *testing.T, f *sshtest.Fixture, socket string) string {
	t.Helper()
	out, err := f.TmuxOn(socket, "list-sessions", "-F", "#{session_name}")
	if err != nil {
		return "" // no server
	}
	var nodes []string
	for _, s := range strings.Fields(out) {
		if strings.HasPrefix(s, "ts-") {
			nodes = append(nodes, s)
		}
	}
	return strings.Join(nodes, " ")
}

// Two orchestrators on one host and user: each has its own remote tmux
// server, so each lists, adopts and closes only its own nodes, through a
// restart and through ending its server (down --all), even with the same
// node id on both.
func TestRemoteTwoOrchestrators(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 22 s on a loaded 2-core machine")
	t.Parallel()
	f := sshtest.New(t)
	srvA, srvB := tmuxtest.New(t), tmuxtest.New(t)
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	for _, d := range []string{dirA, dirB} {
		if err := tools.EnsureStateDir(d); err != nil {
			t.Fatal(err)
		}
	}
	specA, specB := ownedHost(t, f, dirA, f.RemoteDir("a")), ownedHost(t, f, dirB, f.RemoteDir("b"))
	sockA, sockB := specA.OwnedSocket(dirA), specB.OwnedSocket(dirB)
	if sockA == sockB || !tools.ValidNodeID(sockA) {
		t.Fatalf("sockets %q and %q", sockA, sockB)
	}
	open := func(srv *tmuxtest.Server, dir string, spec tools.HostSpec) *Orchestrator {
		return openOrchestratorWith(t, srv, dir, func(c *Config) { c.Hosts = []tools.HostSpec{spec} })
	}
	a, b := open(srvA, dirA, specA), open(srvB, dirB, specB)
	idA := remoteLaunch(t, a, "big", tickArgv...)
	idB := remoteLaunch(t, b, "big", tickArgv...)
	if idA != idB {
		t.Logf("ids %s and %s", idA, idB) // the same id is the hard case; either holds
	}
	waitText(t, a, idA, "tick 2")
	waitText(t, b, idB, "tick 2")
	only := func(o *Orchestrator, id, socket string) {
		t.Helper()
		l := o.List(tctx(t))
		if len(l) != 1 || l[0].Terminal != id || l[0].TmuxSocket != socket || l[0].Status != tools.StatusRunning {
			t.Fatalf("list: %+v, want only %s on %s", l, id, socket)
		}
	}
	only(a, idA, sockA)
	only(b, idB, sockB)
	if got := sessionsOn(t, f, sockA); got != "ts-"+idA {
		t.Fatalf("A's server holds %q", got)
	}
	// A restarts: it adopts its own node and nothing of B's.
	a.Close()
	a = open(srvA, dirA, specA)
	only(a, idA, sockA)
	only(b, idB, sockB)
	// A closes its node: B's runs on.
	if err := a.CloseNode(tctx(t), idA); err != nil {
		t.Fatal(err)
	}
	if len(a.List(tctx(t))) != 0 {
		t.Fatalf("A lists %+v after closing its node", a.List(tctx(t)))
	}
	waitText(t, b, idB, "tick 30")
	// A launches again and ends (down --all's remote step) its own server.
	idA = remoteLaunch(t, a, "big", tickArgv...)
	if got := sessionsOn(t, f, sockA); got != "ts-"+idA {
		t.Fatalf("A's server holds %q before its end", got)
	}
	a.Close()
	kill := specA
	kill.Socket = sockA
	argv := tools.HostKillServerArgv(kill)
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %v: %s", argv, err, out)
	}
	if got := sessionsOn(t, f, sockA); got != "" {
		t.Fatalf("A's server after kill-server: %q", got)
	}
	only(b, idB, sockB)
	if got := sessionsOn(t, f, sockB); got != "ts-"+idB {
		t.Fatalf("B's server holds %q", got)
	}
	b.Close()
	b = open(srvB, dirB, specB)
	only(b, idB, sockB)
	a = open(srvA, dirA, specA)
	if l := a.List(tctx(t)); len(l) != 0 {
		t.Fatalf("A after its server ended: %+v", l)
	}
}
