package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// DefaultTimeout bounds one git call.
const DefaultTimeout = 30 * time.Second

// SetupTimeout bounds a worktree's setup command and a submodule update.
const SetupTimeout = 10 * time.Minute

// Git runs the user's git.
type Git struct {
	// Bin is the git program (default "git" on PATH).
	Bin string
	// Env is added to the environment of every call (tests: HOME).
	Env []string
	// Timeout bounds each call (default DefaultTimeout).
	Timeout time.Duration
}

// ErrTimeout is wrapped by a call that ran out of time.
var ErrTimeout = errors.New("git ran out of time")

// GitError is a git call that failed: its arguments, exit and stderr.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *GitError) Unwrap() error { return e.Err }

func (g Git) bin() string {
	if g.Bin == "" {
		return "git"
	}
	return g.Bin
}

func (g Git) timeout() time.Duration {
	if g.Timeout <= 0 {
		return DefaultTimeout
	}
	return g.Timeout
}

// call is one git run.
type call struct {
	dir     string
	args    []string
	read    bool      // GIT_OPTIONAL_LOCKS=0
	stdin   io.Reader // optional
	stdout  io.Writer // optional: else captured
	limit   time.Duration
	extraEv []string
}

// command builds a process in its own process group whose context's end
// kills the group.
func command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	groupKill(cmd)
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

func (g Git) do(ctx context.Context, c call) ([]byte, error) {
	limit := c.limit
	if limit <= 0 {
		limit = g.timeout()
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := command(ctx, g.bin(), c.args...)
	cmd.Dir = c.dir
	env := append(os.Environ(), g.Env...)
	env = append(env, "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=", "GIT_EDITOR=true", "GIT_PAGER=cat", "LC_ALL=C")
	if c.read {
		env = append(env, "GIT_OPTIONAL_LOCKS=0")
	}
	cmd.Env = append(env, c.extraEv...)
	var out, errb bytes.Buffer
	if c.stdout != nil {
		cmd.Stdout = c.stdout
	} else {
		cmd.Stdout = &out
	}
	cmd.Stderr = &limitedBuffer{b: &errb, max: 64 << 10}
	cmd.Stdin = c.stdin
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return out.Bytes(), &GitError{Args: c.args, Stderr: errb.String(), Err: fmt.Errorf("%w after %s", ErrTimeout, limit)}
	}
	if err != nil {
		return out.Bytes(), &GitError{Args: c.args, Stderr: errb.String(), Err: err}
	}
	return out.Bytes(), nil
}

// read runs a read-only git command in dir.
func (g Git) read(ctx context.Context, dir string, args ...string) (string, error) {
	b, err := g.do(ctx, call{dir: dir, args: args, read: true})
	return string(b), err
}

// write runs a git command that changes the repository.
func (g Git) write(ctx context.Context, dir string, args ...string) (string, error) {
	b, err := g.do(ctx, call{dir: dir, args: args})
	return string(b), err
}

// ok reports whether a read-only git command exits 0 (a non-zero exit is
// false; a timeout or a missing git is an error).
func (g Git) ok(ctx context.Context, dir string, args ...string) (bool, error) {
	_, err := g.read(ctx, dir, args...)
	if err == nil {
		return true, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && !errors.Is(err, ErrTimeout) {
		return false, nil
	}
	return false, err
}

// limitedBuffer keeps the first max bytes and drops the rest.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
