package orchestrator

import (
	"cmp"
	"context"
	"fmt"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/launchenv"
	"github.com/termsprawl/termsprawl/tools"
)

// A launch on a host: the launchTarget of a node there. The host table,
// adoption and the rest of the nodes on hosts are orchestrator/hostnodes'
// (host.go is the glue).

// hostTarget is a launch on a host: its defaults, checks, files and
// environment are the remote side's (Launch's one sequence, launch.go).
type hostTarget struct {
	h        *hosts.SSH
	stateDir string
}

func (t hostTarget) host() string { return t.h.Spec().Name }

func (t hostTarget) probe() (hosts.Probe, string) { return t.h.Probe() }

func (t hostTarget) defaultShell() string { p, _ := t.probe(); return cmp.Or(p.Shell, "/bin/sh") }
func (t hostTarget) defaultCwd() string   { p, _ := t.probe(); return p.Home }

// check: logs were refused already (target).
func (t hostTarget) check(ctx context.Context, spec LaunchSpec) ([]tools.LogSpec, error) {
	return nil, t.h.CheckProgram(ctx, spec.Cwd, spec.Command[0])
}

func (t hostTarget) server(ctx context.Context, r *reservation) (hosts.Server, error) {
	srv := t.h.Server()
	if srv == nil {
		e := tools.Errorf(tools.KindUnavailable, "host %s is unreachable: retry when it is back", t.h.Spec().Name).WithDetails("host", t.h.Spec().Name)
		e.Retryable = true
		return nil, e
	}
	return srv, nil
}

// env is the -e list of a remote node (launchenv.Remote).
func (t hostTarget) env(spec LaunchSpec, id string, _ hosts.Server) []string {
	p, rdir := t.probe()
	return launchenv.Remote{Env: spec.Env, Extra: spec.ExtraEnv, Ctl: p.Ctl, Path: p.Path, ID: id, SessionFile: hosts.SessionPath(rdir, id),
		Home: rdir, Socket: t.h.Spec().RemoteSocket(), Host: t.h.Spec().Name, Sandbox: node.SandboxName(spec.Sandbox)}.List()
}

func (t hostTarget) wrap(ctx context.Context, spec LaunchSpec, id string, argv []string) ([]string, error) {
	return t.h.Sandboxed(ctx, spec.Sandbox, spec.Cwd, id, argv)
}

func (t hostTarget) writeFiles(ctx context.Context, id string) error {
	if err := t.h.WriteSession(ctx, t.stateDir, id); err != nil {
		return tools.Errorf(tools.KindUnavailable, "host %s: write the session file of %s: %w", t.h.Spec().Name, id, err)
	}
	return nil
}

func (t hostTarget) removeFiles(ctx context.Context, id string) {
	t.h.RemoveSession(ctx, id)
}

// retry: a lost connection is the supervisor's to bring back.
func (hostTarget) retry(context.Context, hosts.Server, error) bool { return false }

func (t hostTarget) fail(err error) error {
	return t.h.Err(fmt.Errorf("host %s: %w", t.h.Spec().Name, err))
}
