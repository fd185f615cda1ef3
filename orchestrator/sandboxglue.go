package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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

// sandboxCacheDir is where a node's private caches live: with its other
// files, removed when it is closed.
func (o *Orchestrator) sandboxCacheDir(id string) string {
	return statefile.Path(o.cfg.StateDir, id, statefile.Cache)
}

// tmuxSocketDirs are every tmux socket directory of the user: the
// private servers', the default server's (/tmp/tmux-UID), and the
// directory of the socket of the tmux termsprawl was started in.
func tmuxSocketDirs() []string {
	dirs := []string{hosts.SocketDir(), filepath.Join("/tmp", fmt.Sprintf("tmux-%d", os.Getuid()))}
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
	bwrap, err := o.sbProbe.Bwrap(ctx)
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
	if _, err := o.sbProbe.Bwrap(ctx); err != nil {
		return tools.Errorf(tools.KindUnavailable, "node not launched: the %s sandbox cannot start: %v; %s", p, err, sandbox.Fix).
			WithDetails("sandbox", string(p))
	}
	return nil
}
