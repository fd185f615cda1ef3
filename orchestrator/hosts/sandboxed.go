package hosts

import (
	"context"
	"errors"
	"path"
	"strings"

	"github.com/termsprawl/termsprawl/orchestrator/sandbox"
	"github.com/termsprawl/termsprawl/tools"
)

// Sandboxed wraps a node's program on the host in its profile's sandbox:
// the host's own bwrap, with the paths a probe over ssh found there. A
// host without a usable bwrap refuses every profile but none.
func (h *SSH) Sandboxed(ctx context.Context, profile, cwd, id string, argv []string) ([]string, error) {
	p := sandbox.Profile(profile)
	if p == "" || p == sandbox.None {
		return argv, nil
	}
	if _, err := sandbox.Parse(profile); err != nil {
		return nil, tools.Errorf(tools.KindUsage, "%v", err)
	}
	name := h.Spec().Name
	probe, rdir := h.Probe()
	home := probe.Home
	session := SessionPath(rdir, id)
	var paths []string
	for _, list := range [][]string{sandbox.AgentDirs, sandbox.Caches, sandbox.Secrets} {
		for _, r := range list {
			paths = append(paths, home+"/"+r)
		}
	}
	paths = append(paths, home, cwd, rdir, session, rdir+"/endpoint.json", rdir+"/agent-tools")
	// What the program needs that may be under the private /tmp: the
	// home directory, termsprawlctl, the PATH directories.
	keep := []string{home}
	if probe.Ctl != "" {
		keep = append(keep, path.Dir(probe.Ctl))
	}
	for _, d := range strings.Split(probe.Path, ":") {
		if path.IsAbs(d) {
			keep = append(keep, d)
		}
	}
	paths = append(paths, keep...)
	sp, err := h.ProbeSandbox(ctx, paths)
	switch {
	case errors.Is(err, ErrNoBwrap) || errors.Is(err, ErrBwrapRefuses):
		return nil, tools.Errorf(tools.KindUnavailable, "node not launched: host %s %v, so the %s sandbox cannot start there: install bubblewrap on %s (`apt-get install bubblewrap`), or launch with `--sandbox none` (it then runs unsandboxed there)", name, err, p, name).
			WithDetails("host", name).WithDetails("sandbox", string(p))
	case err != nil:
		return nil, tools.Errorf(tools.KindUnavailable, "host %s: %w", name, err)
	}
	uid, gid := sp.UID, sp.GID
	if uid == 0 {
		uid = sandbox.RootMappedID
	}
	if gid == 0 {
		gid = sandbox.RootMappedID
	}
	visible := []string{session, rdir + "/endpoint.json", rdir + "/agent-tools"}
	if probe.Ctl != "" {
		// termsprawlctl where the host keeps it (its hooks and MCP).
		visible = append(visible, path.Dir(probe.Ctl))
	}
	s := sandbox.Spec{Profile: p, Home: home, Dir: cwd, StateDir: rdir, Visible: visible,
		TmuxDirs: sp.TmuxDirs, UID: uid, GID: gid, Keep: keep, Kind: func(p string) byte { return sp.Kinds[p] }}
	if p == sandbox.Workspace {
		// No private caches on a host (nothing is made there): they stay
		// read-only, as the rest of the home directory.
		s.CacheDir = "/nonexistent"
	}
	return sandbox.Command(sp.Bwrap, s, argv)
}
