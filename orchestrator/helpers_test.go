package orchestrator

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// newTestOrchestrator starts an orchestrator on a private tmux server and
// a temporary state dir; both are cleaned up.
func newTestOrchestrator(t *testing.T) (*Orchestrator, *tmuxtest.Server) {
	t.Helper()
	srv, dir := newTestServer(t)
	o := openOrchestrator(t, srv, dir)
	return o, srv
}

// newTestServer is a private tmux server and a new state dir (both
// cleaned up), for tests that open the orchestrator themselves.
func newTestServer(t *testing.T) (*tmuxtest.Server, string) {
	t.Helper()
	srv := tmuxtest.New(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	return srv, dir
}

func openOrchestrator(t *testing.T, srv *tmuxtest.Server, dir string) *Orchestrator {
	t.Helper()
	return openOrchestratorWith(t, srv, dir, nil)
}

// openWatching is an engine of its own tmux server and state directory
// whose launches watch for early exits for watch (DefaultLaunchWatch: as
// a user's do).
func openWatching(t *testing.T, watch time.Duration) *Orchestrator {
	t.Helper()
	srv := tmuxtest.New(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	return openOrchestratorWith(t, srv, dir, func(c *Config) { c.LaunchWatch = watch })
}

// openOrchestratorWith is openOrchestrator with a chance to change the
// config.
func openOrchestratorWith(t *testing.T, srv *tmuxtest.Server, dir string, mod func(*Config)) *Orchestrator {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The production launch path: launches watch for early exits
	// (DefaultLaunchWatch), as they do for users.
	cfg := Config{StateDir: dir, Socket: srv.Socket}
	if mod != nil {
		mod(&cfg)
	}
	if os.Getenv("TERMSPRAWL_TEST_LOG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	o, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	return o
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// launch starts a node running argv at 80x24 in a temp dir.
func launch(t *testing.T, o *Orchestrator, argv ...string) string {
	t.Helper()
	info, err := o.Launch(tctx(t), LaunchSpec{Command: argv, Cwd: t.TempDir(), Columns: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	return info.Terminal
}

// waitText waits for text on a node or fails the test with the screen.
func waitText(t *testing.T, o *Orchestrator, id, text string) tools.WaitResult {
	t.Helper()
	// From the start of this life of the node's mirror.
	after := uint64(0)
	if n := o.node(id); n != nil {
		after = node.RevisionBase(n.Meta.Epoch)
	}
	r, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitText, Text: text, After: &after, TimeoutMS: 20000})
	if err != nil {
		snap, _ := o.Snapshot(context.Background(), id)
		t.Fatalf("wait for %q: %v\nscreen:\n%s", text, err, strings.Join(snap.Lines, "\n"))
	}
	return r
}

// bashArgv is a predictable interactive bash.
func bashArgv() []string {
	return []string{"bash", "--norc", "--noprofile", "-i"}
}

func writeScript(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func controlClients(socket string) []int { return tmuxtest.ControlClients(socket) }

func derefInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// need skips the test when a program it drives is not installed (every
// machine of this project's kind has them; the message says what to
// install elsewhere).
func need(t *testing.T, programs ...string) {
	t.Helper()
	for _, p := range programs {
		testenv.LookPath(t, p, "apt-get install "+p) // skips, or fails in CI
	}
}
