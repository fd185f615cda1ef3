package hostnodes

import (
	"cmp"
	"context"
	"fmt"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/launchenv"
	"github.com/termsprawl/termsprawl/orchestrator/node"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// Target is a launch on a host: its defaults, checks, files and
// environment are the remote side's. The engine's launch sequence sees
// it as its launchTarget (hostTarget, the engine's remote.go).
type Target struct {
	h        *hosts.SSH
	stateDir string
}

// Target returns the launch target of the connected host name, or the
// error to answer (connected).
func (r *Hosts) Target(ctx context.Context, name string) (Target, error) {
	h, err := r.connected(ctx, name)
	if err != nil {
		return Target{}, err
	}
	return Target{h: h, stateDir: r.cfg.StateDir}, nil
}

// Host names the machine.
func (t Target) Host() string { return t.h.Spec().Name }

// DefaultShell is the program of a launch without a command: the host's
// login shell.
func (t Target) DefaultShell() string { p, _ := t.h.Probe(); return cmp.Or(p.Shell, "/bin/sh") }

// DefaultCwd is the directory of a launch without a cwd: the home there.
func (t Target) DefaultCwd() string { p, _ := t.h.Probe(); return p.Home }

// Check refuses a program that cannot start there (logs were refused
// already: they are followed on this machine only).
func (t Target) Check(ctx context.Context, spec statefile.LaunchSpec) ([]tools.LogSpec, error) {
	return nil, t.h.CheckProgram(ctx, spec.Cwd, spec.Command[0])
}

// Server is the host's connected server, or unavailable (retryable).
func (t Target) Server() (hosts.Server, error) {
	srv := t.h.Server()
	if srv == nil {
		e := tools.Errorf(tools.KindUnavailable, "host %s is unreachable: retry when it is back", t.h.Spec().Name).WithDetails("host", t.h.Spec().Name)
		e.Retryable = true
		return nil, e
	}
	return srv, nil
}

// Env is the -e list of a remote node (launchenv.Remote).
func (t Target) Env(spec statefile.LaunchSpec, id string) []string {
	p, rdir := t.h.Probe()
	return launchenv.Remote{Env: spec.Env, Extra: spec.ExtraEnv, Ctl: p.Ctl, Path: p.Path, ID: id, SessionFile: hosts.SessionPath(rdir, id),
		Home: rdir, Socket: t.h.Spec().RemoteSocket(), Host: t.h.Spec().Name, Sandbox: node.SandboxName(spec.Sandbox)}.List()
}

// Wrap puts the node's program in its sandbox with the host's own bwrap.
func (t Target) Wrap(ctx context.Context, spec statefile.LaunchSpec, id string, argv []string) ([]string, error) {
	return t.h.Sandboxed(ctx, spec.Sandbox, spec.Cwd, id, argv)
}

// WriteFiles puts the node's session file on the host; RemoveFiles
// undoes it.
func (t Target) WriteFiles(ctx context.Context, id string) error {
	if err := t.h.WriteSession(ctx, t.stateDir, id); err != nil {
		return tools.Errorf(tools.KindUnavailable, "host %s: write the session file of %s: %w", t.h.Spec().Name, id, err)
	}
	return nil
}

// RemoveFiles removes the node's session file on the host.
func (t Target) RemoveFiles(ctx context.Context, id string) { t.h.RemoveSession(ctx, id) }

// Fail is err as the caller should see it (hosts.SSH.Err).
func (t Target) Fail(err error) error {
	return t.h.Err(fmt.Errorf("host %s: %w", t.h.Spec().Name, err))
}
