package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/termsprawl/termsprawl/orchestrator/config"
	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/sandbox"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// Sandboxes around nodes' programs (CONTRACT §27): the engine's glue to
// orchestrator/sandbox. A node's profile is decided by the tool server
// (defaults, the launching agent's floor) and kept in its launch, so a
// restore starts it under the same one.

// SandboxSettings are config.toml's [sandbox] settings in force (the
// defaults without a file).
func (o *Orchestrator) SandboxSettings() config.Sandbox {
	if o.cfg.Settings != nil {
		if c := o.cfg.Settings.Current(); c != nil {
			return c.Sandbox
		}
	}
	return config.Default().Sandbox
}

// sandboxProbe remembers bwrap's last successful probe: a failure is
// probed again at the next launch (bwrap may have been installed since).
type sandboxProbe struct {
	mu   sync.Mutex // guards path
	path string     // bwrap that ran a trivial sandbox; "" until one did
}

// bwrap is the bwrap to wrap with, probed once it works.
func (o *Orchestrator) bwrap(ctx context.Context) (string, error) {
	p := &o.sbProbe
	p.mu.Lock()
	defer p.mu.Unlock()
	if want, err := sandbox.LookPath(); err == nil && want == p.path {
		return p.path, nil
	}
	info, err := sandbox.Probe(ctx)
	if err != nil {
		p.path = ""
		return "", err
	}
	p.path = info.Path
	return p.path, nil
}

// sandboxCacheDir is where a node's private caches live: with its other
// files, removed when it is closed.
func (o *Orchestrator) sandboxCacheDir(id string) string {
	return statefile.Path(o.cfg.StateDir, id, statefile.Cache)
}

// removeCache removes a node's private caches, making read-only
// directories writable first (Go's module cache is read-only).
func removeCache(dir string) {
	if _, err := os.Lstat(dir); err != nil {
		return
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}

// tmuxSocketDirs are every tmux socket directory of the user: the
// private servers', the default server's (/tmp/tmux-UID), and the
// directory of the socket of the tmux termsprawl was started in.
func tmuxSocketDirs() []string {
	dirs := []string{socketDir(), filepath.Join("/tmp", fmt.Sprintf("tmux-%d", os.Getuid()))}
	if t := os.Getenv("TMUX"); t != "" {
		if sock, _, _ := strings.Cut(t, ","); filepath.IsAbs(sock) {
			dirs = append(dirs, filepath.Dir(sock))
		}
	}
	return dirs
}

// sandboxed wraps argv (a local node's program) in its profile's
// sandbox, or refuses the launch with the reason and the fix.
func (o *Orchestrator) sandboxed(ctx context.Context, spec LaunchSpec, id string, argv []string) ([]string, error) {
	p := sandbox.Profile(spec.Sandbox)
	if p == "" || p == sandbox.None {
		return argv, nil
	}
	if _, err := sandbox.Parse(spec.Sandbox); err != nil {
		return nil, usage("%v", err)
	}
	bwrap, err := o.bwrap(ctx)
	if err != nil {
		return nil, tools.Errorf(tools.KindUnavailable, "the %s sandbox cannot start: %w: %s", p, err, sandbox.Fix).
			WithDetails("sandbox", string(p))
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, tools.Errorf(tools.KindUnavailable, "the %s sandbox needs the home directory: %w", p, err)
	}
	set := o.SandboxSettings()
	uid, gid := sandbox.InsideIDs()
	s := sandbox.Spec{Profile: p, Home: home, Dir: spec.Cwd, StateDir: o.cfg.StateDir,
		Visible: []string{tools.SessionPath(o.cfg.StateDir, id), tools.EndpointPath(o.cfg.StateDir),
			filepath.Join(o.cfg.StateDir, tools.AgentToolsDir)},
		TmuxDirs: tmuxSocketDirs(), Hide: set.Hide, SharedCaches: set.SharedCaches,
		CacheDir: o.sandboxCacheDir(id), UID: uid, GID: gid, Keep: []string{home}, Agent: spec.Agent}
	if p == sandbox.Workspace {
		s.Git = sandbox.FindGit(spec.Cwd)
	}
	if o.cfg.CtlPath != "" {
		s.Keep = append(s.Keep, filepath.Dir(o.cfg.CtlPath))
	}
	for _, kv := range o.launchEnv(spec, id, "") {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			s.Keep = append(s.Keep, filepath.SplitList(v)...)
		}
		if strings.HasPrefix(kv, "CLAUDE_CONFIG_DIR=") {
			s.OwnClaudeConfig = true
		}
	}
	if filepath.IsAbs(argv[0]) {
		s.Keep = append(s.Keep, filepath.Dir(argv[0]))
	}
	if err := sandbox.Prepare(s); err != nil {
		return nil, tools.Errorf(tools.KindUnavailable, "the %s sandbox: %w", p, err)
	}
	out, err := sandbox.Command(bwrap, s, argv)
	if err != nil {
		return nil, tools.Errorf(tools.KindUnavailable, "the %s sandbox: %w", p, err)
	}
	return out, nil
}

// checkSandbox refuses, before anything exists, a sandboxed launch
// without a usable bwrap or with an unknown profile.
func (o *Orchestrator) checkSandbox(ctx context.Context, spec LaunchSpec) error {
	if spec.Sandbox == "" || spec.Sandbox == string(sandbox.None) {
		return nil
	}
	p, err := sandbox.Parse(spec.Sandbox)
	if err != nil {
		return usage("%v", err)
	}
	if _, err := o.bwrap(ctx); err != nil {
		return tools.Errorf(tools.KindUnavailable, "node not launched: the %s sandbox cannot start: %v; %s", p, err, sandbox.Fix).
			WithDetails("sandbox", string(p))
	}
	return nil
}

// sandboxed wraps a node's program on a host in its profile's sandbox:
// the host's own bwrap, with the paths a probe over ssh found there. A
// host without a usable bwrap refuses every profile but none.
func (h *remoteHost) sandboxed(ctx context.Context, spec LaunchSpec, id string, argv []string) ([]string, error) {
	p := sandbox.Profile(spec.Sandbox)
	if p == "" || p == sandbox.None {
		return argv, nil
	}
	if _, err := sandbox.Parse(spec.Sandbox); err != nil {
		return nil, usage("%v", err)
	}
	name := h.Spec().Name
	probe, rdir := h.Probe()
	home := probe.Home
	session := hosts.SessionPath(rdir, id)
	var paths []string
	for _, list := range [][]string{sandbox.AgentDirs, sandbox.Caches, sandbox.Secrets} {
		for _, r := range list {
			paths = append(paths, home+"/"+r)
		}
	}
	paths = append(paths, home, spec.Cwd, rdir, session, rdir+"/endpoint.json", rdir+"/agent-tools")
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
	case errors.Is(err, hosts.ErrNoBwrap) || errors.Is(err, hosts.ErrBwrapRefuses):
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
	s := sandbox.Spec{Profile: p, Home: home, Dir: spec.Cwd, StateDir: rdir, Visible: visible,
		TmuxDirs: sp.TmuxDirs, UID: uid, GID: gid, Keep: keep, Kind: func(p string) byte { return sp.Kinds[p] }}
	if p == sandbox.Workspace {
		// No private caches on a host (nothing is made there): they stay
		// read-only, as the rest of the home directory.
		s.CacheDir = "/nonexistent"
	}
	return sandbox.Command(sp.Bwrap, s, argv)
}
