package orchestrator

// Remote hosts against local nodes, side by side in one run (the host is
// sshd in a network namespace on this machine: the figures are the cost
// of ssh and the namespace link, not of a network):
//
//	go test ./orchestrator/ -run '^$' -bench 'Remote' -benchtime 200x
//	go test ./orchestrator/ -run '^$' -bench 'RemoteReconnect' -benchtime 5x

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/internal/sshtest"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// benchRemote is an orchestrator with the fixture's good host as "big".
func benchRemote(b *testing.B) (*Orchestrator, *sshtest.Fixture) {
	b.Helper()
	return benchRemoteHooks(b, nil)
}

// benchRemoteHooks is benchRemote with test hooks h set from the start.
func benchRemoteHooks(b *testing.B, h *hooks) (*Orchestrator, *sshtest.Fixture) {
	b.Helper()
	f := sshtest.New(b)
	srv := tmuxtest.New(b)
	dir := filepath.Join(b.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := Config{StateDir: dir, Socket: srv.Socket, LaunchWatch: -1, Hosts: []tools.HostSpec{
		{Name: "big", Dest: sshtest.Good, SSHOptions: f.SSHOptions(), Socket: f.RemoteSocket, RemoteDir: f.RemoteDir("big")}}, hooks: h}
	if os.Getenv("TERMSPRAWL_TEST_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	o, err := New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(o.Close)
	return o, f
}

// BenchmarkRemoteRoundTrip: one control-mode command round trip on a
// node's own client (local: a pipe to tmux; remote: an ssh mux session),
// and input → echo (type a token into cat, wait until the mirror shows
// it).
func BenchmarkRemoteRoundTrip(b *testing.B) {
	o, _ := benchRemote(b)
	for _, host := range []string{"", "big"} {
		where := "local"
		if host != "" {
			where = "remote"
		}
		launchIn := 20 * time.Second
		if host != "" {
			launchIn = 30 * time.Second // the ssh round trips
		}
		info, err := o.Launch(bctx(b, launchIn), LaunchSpec{Command: []string{"cat"}, Host: host, Cwd: "/", Columns: 80, Rows: 24})
		if err != nil {
			b.Fatal(err)
		}
		n := o.node(info.Terminal)
		b.Run("command/"+where, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for range b.N {
				start := time.Now()
				if _, err := n.Client.Run(context.Background(), tmuxctl.Command("display-message", "-p", "ok")); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			reportLatencies(b, lat)
		})
		b.Run("echo/"+where, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for i := range b.N {
				token := fmt.Sprintf("e%07d", i)
				start := time.Now()
				if _, err := o.Type(bctx(b, 10*time.Second), info.Terminal, token, nil); err != nil {
					b.Fatal(err)
				}
				zero := node.RevisionBase(n.Meta.Epoch)
				if r, err := o.WaitFor(bctx(b, 10*time.Second), info.Terminal, tools.WaitSpec{Wait: tools.WaitRender, After: &zero, TimeoutMS: 10000}); err != nil || !r.Matched {
					b.Fatalf("render wait: %+v %v", r, err)
				}
				for {
					snap, _ := o.Snapshot(context.Background(), info.Terminal)
					if strings.Contains(strings.Join(snap.Lines, "\n"), token) {
						break
					}
					rev := snap.Revision
					o.WaitFor(bctx(b, 10*time.Second), info.Terminal, tools.WaitSpec{Wait: tools.WaitRender, After: &rev, TimeoutMS: 10000})
				}
				lat = append(lat, time.Since(start))
				if i%20 == 19 {
					o.Press(bctx(b, 10*time.Second), info.Terminal, "C-u", nil) // keep the line short
				}
			}
			reportLatencies(b, lat)
		})
	}
}

// BenchmarkRemoteWakeLatency is BenchmarkWakeLatency's event case for a
// node here and one on the host: from the program's write to the waiter's
// wake-up.
func BenchmarkRemoteWakeLatency(b *testing.B) {
	o, _ := benchRemote(b)
	for _, host := range []string{"", "big"} {
		where := "local"
		if host != "" {
			where = "remote"
		}
		id, fifo := stampNodeOn(b, o, host)
		b.Run(where, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for i := range b.N {
				token := fmt.Sprintf("K=%s%07d", where[:1], i)
				snap, err := o.Snapshot(context.Background(), id)
				if err != nil {
					b.Fatal(err)
				}
				rev := snap.Revision
				done := make(chan time.Time, 1)
				go func() {
					r, err := o.WaitFor(context.Background(), id, tools.WaitSpec{Wait: tools.WaitText, Text: token, After: &rev, TimeoutMS: 10000})
					if err != nil || !r.Matched {
						done <- time.Time{}
						return
					}
					done <- time.Now()
				}()
				time.Sleep(time.Millisecond + rand.N(9*time.Millisecond))
				if _, err := fifo.WriteString(token[2:] + "\n"); err != nil {
					b.Fatal(err)
				}
				at := <-done
				if at.IsZero() {
					b.Fatalf("iteration %d: the wait failed", i)
				}
				snap, _ = o.Snapshot(context.Background(), id)
				written, ok := stampOf(strings.Join(snap.Lines, "\n"), token)
				if !ok {
					b.Fatalf("no stamp for %s", token)
				}
				lat = append(lat, at.Sub(written))
			}
			reportLatencies(b, lat)
		})
	}
}

// stampNodeOn launches echoStamp on a node on host ("" for this machine)
// and returns the node id and the FIFO, opened read-write so opening
// never blocks and the reader never sees EOF. The test namespace shares
// this file system, so the FIFO is reachable from both sides.
func stampNodeOn(b *testing.B, o *Orchestrator, host string) (string, *os.File) {
	b.Helper()
	dir := b.TempDir()
	fifo := filepath.Join(dir, "in.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		b.Fatal(err)
	}
	f, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	launchIn := 20 * time.Second
	if host != "" {
		launchIn = 30 * time.Second // the ssh round trips
	}
	info, err := o.Launch(bctx(b, launchIn), LaunchSpec{Command: []string{python3(b), "-u", "-c", echoStamp, fifo},
		Host: host, Cwd: dir, Columns: 80, Rows: 24})
	if err != nil {
		b.Fatal(err)
	}
	if r, err := o.WaitFor(bctx(b, 20*time.Second), info.Terminal, tools.WaitSpec{Wait: tools.WaitText, Text: "stamp-ready", After: new(uint64), TimeoutMS: 20000}); err != nil || !r.Matched {
		b.Fatalf("stamp program never started: %+v %v", r, err)
	}
	return info.Terminal, f
}

// BenchmarkRemoteReconnect: from killing the ssh master to the host's
// node mirrored again (ns/op; also reported as ms).
func BenchmarkRemoteReconnect(b *testing.B) {
	adopted := make(chan string, 4)
	o, _ := benchRemoteHooks(b, &hooks{hostAdopted: func(h string) { adopted <- h }})
	<-adopted
	if _, err := o.Launch(bctx(b, 30*time.Second), LaunchSpec{Command: []string{"cat"}, Host: "big", Cwd: "/"}); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		st := hostStatus(o, "big")
		p, err := os.FindProcess(st.MasterPID)
		if err != nil || st.MasterPID == 0 {
			b.Fatalf("no master: %+v", st)
		}
		start := time.Now()
		p.Kill()
		select {
		case <-adopted:
		case <-time.After(30 * time.Second):
			b.Fatal("no reconnect in 30 s")
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportLatencies(b, lat)
}
