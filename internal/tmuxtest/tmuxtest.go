// Package tmuxtest starts private tmux servers for tests. Every server has
// a unique socket name (tmux -L), uses no configuration file, and is killed
// by name when the test ends; the user's default server is never touched.
package tmuxtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// Server is one private tmux server.
type Server struct {
	t      testing.TB
	Socket string
}

// New returns a fresh socket name whose server is killed at cleanup. The
// server itself starts with the first session. Without tmux the test
// skips, or fails under TERMSPRAWL_REQUIRE_ALL (internal/testenv).
func New(t testing.TB) *Server {
	t.Helper()
	testenv.LookPath(t, "tmux", "apt-get install tmux") // skips, or fails in CI
	var b [6]byte
	rand.Read(b[:])
	s := &Server{t: t, Socket: fmt.Sprintf("tstest-%d-%s", os.Getpid(), hex.EncodeToString(b[:]))}
	t.Cleanup(s.Kill)
	return s
}

// Cmd runs one tmux command on this server and returns its stdout.
func (s *Server) Cmd(args ...string) (string, error) {
	argv := append([]string{"-L", s.Socket, "-f", os.DevNull}, args...)
	cmd := exec.Command("tmux", argv...)
	cmd.Env = Env()
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return string(out), fmt.Errorf("tmux %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// Must is Cmd that fails the test on error.
func (s *Server) Must(args ...string) string {
	s.t.Helper()
	out, err := s.Cmd(args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// Kill kills this server only (tmux -L SOCKET kill-server) and removes
// its socket file, which a server killed with SIGKILL leaves behind; and
// the same for the shard servers an orchestrator started beside it
// (SOCKET-2, SOCKET-3, …: this test's alone, by their unique name).
func (s *Server) Kill() {
	s.Cmd("kill-server")
	os.Remove(SocketPath(s.Socket))
	shards, _ := filepath.Glob(SocketPath(s.Socket) + "-[0-9]*")
	for _, p := range shards {
		name := filepath.Base(p)
		cmd := exec.Command("tmux", "-L", name, "-f", os.DevNull, "kill-server")
		cmd.Env = Env()
		cmd.Run()
		os.Remove(p)
	}
}

// SocketPath is where tmux puts the socket of `tmux -L name`.
func SocketPath(name string) string {
	dir := os.Getenv("TMUX_TMPDIR")
	if dir == "" {
		dir = "/tmp"
	}
	return filepath.Join(dir, fmt.Sprintf("tmux-%d", os.Getuid()), name)
}

// Env is the environment for tmux children: TMUX and TMUX_PANE removed so
// tests work when run from inside tmux.
func Env() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TMUX=") || strings.HasPrefix(kv, "TMUX_PANE=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// ControlClients returns the pids of `tmux -C` processes that use
// socket, read from /proc (zombies included: the caller decides).
func ControlClients(socket string) []int {
	return testenv.TmuxPids(func(s string, args []string) bool {
		return s == socket && (slices.Contains(args, "-C") || slices.Contains(args, "-CC"))
	})
}
