package node

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// fakeHostServer is a host's server whose /proc says every pid is a
// zombie that exited with code (and counts the reads).
type fakeHostServer struct {
	hosts.Server
	code  int
	reads int
}

func (*fakeHostServer) Remote() bool { return true }

func (f *fakeHostServer) ProcStat(_ context.Context, pid int) ([]byte, error) {
	f.reads++
	fields := make([]string, 50)
	for i := range fields {
		fields[i] = "0"
	}
	fields[0] = "Z"
	fields[49] = strconv.Itoa(f.code << 8) // a wait status: exited with code
	return []byte(strconv.Itoa(pid) + " (sh) " + strings.Join(fields, " ")), nil
}

// A remote pane's exit is confirmed from the host's /proc, never this
// machine's: here the pid is this test's own (alive here), and the host
// says it is a zombie that exited 7.
func TestRemoteExitReadOnTheHost(t *testing.T) {
	srv := &fakeHostServer{code: 7}
	n := &Node{Srv: srv, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Meta: statefile.NodeMeta{ID: "x", Host: "big"}}
	n.st.Store(newState(tools.StatusRunning, ""))
	n.setPid(os.Getpid())
	n.exitChecks = maxExitChecks
	if dead, code := n.confirmExit(7); !dead || code != 7 || srv.reads == 0 {
		t.Fatalf("confirmExit: dead %v code %d after %d reads on the host", dead, code, srv.reads)
	}
	if code, ok := n.ZombieStatus(n.Pid()); !ok || code != 7 {
		t.Fatalf("zombieStatus: %d %v", code, ok)
	}
}
