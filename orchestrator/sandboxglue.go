package orchestrator

import (
	"context"
	"os"
	"path/filepath"

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
		TmuxDirs: sandbox.TmuxSocketDirs(hosts.SocketDir()), Hide: set.Hide, SharedCaches: set.SharedCaches,
		CacheDir: o.sandboxCacheDir(id), UID: uid, GID: gid, Keep: []string{home}, Agent: spec.Agent}
	if o.cfg.CtlPath != "" {
		s.Keep = append(s.Keep, filepath.Dir(o.cfg.CtlPath))
	}
	out, err := sandbox.Wrap(bwrap, s, o.launchEnv(spec, id, ""), argv)
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
