package hosts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/termsprawl/termsprawl/tmuxctl"
)

// What a host has for a sandbox (CONTRACT §27): its own bwrap, proved
// to start a trivial sandbox there, the ids a program runs as, its tmux
// socket directories and which of the paths a profile names exist (a
// directory or a file).

// Errors of ProbeSandbox when the host cannot sandbox.
var (
	ErrNoBwrap      = errors.New("has no bwrap")
	ErrBwrapRefuses = errors.New("has a bwrap that refuses to start a sandbox (user namespaces disabled?)")
)

// SandboxProbe is one probe's answer.
type SandboxProbe struct {
	Bwrap    string
	UID, GID int
	TmuxDirs []string
	// Kinds are 'd' (a directory) or 'f' (another file) for each probed
	// path that exists.
	Kinds map[string]byte
}

// ProbeSandbox runs one script on the host: bwrap found and started, the
// ids, the tmux socket directories and the kinds of paths.
func (h *SSH) ProbeSandbox(ctx context.Context, paths []string) (SandboxProbe, error) {
	script := "b=$(command -v bwrap) || exit 5\n" +
		"\"$b\" --unshare-user --uid 1000 --gid 1000 --unshare-pid --die-with-parent --ro-bind / / --dev /dev --proc /proc -- true >/dev/null 2>&1 || exit 6\n" +
		"echo \"bwrap $b\"; echo \"ids $(id -u) $(id -g)\"; t=${TMUX_TMPDIR:-/tmp}/tmux-$(id -u); [ -d \"$t\" ] && echo \"d $t\"; [ -d /tmp/tmux-$(id -u) ] && echo \"d /tmp/tmux-$(id -u)\"\n" +
		"for p in"
	for _, pth := range paths {
		script += " " + tmuxctl.ShellQuote(pth)
	}
	script += "; do if [ -d \"$p\" ]; then echo \"d $p\"; elif [ -e \"$p\" ]; then echo \"f $p\"; fi; done\n"
	out, err := h.Exec(ctx, script, nil)
	var ee interface{ ExitCode() int }
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() == 5:
		return SandboxProbe{}, ErrNoBwrap
	case errors.As(err, &ee) && ee.ExitCode() == 6:
		return SandboxProbe{}, ErrBwrapRefuses
	default:
		return SandboxProbe{}, fmt.Errorf("probe the sandbox: %w", err)
	}
	p := SandboxProbe{Kinds: map[string]byte{}}
	for _, l := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(l, " ")
		switch k {
		case "bwrap":
			p.Bwrap = v
		case "ids":
			fmt.Sscan(v, &p.UID, &p.GID)
		case "d", "f":
			p.Kinds[v] = k[0]
			if strings.Contains(v, "/tmux-") {
				p.TmuxDirs = append(p.TmuxDirs, v)
			}
		}
	}
	if p.Bwrap == "" {
		return p, errors.New("the sandbox probe did not name bwrap")
	}
	return p, nil
}
