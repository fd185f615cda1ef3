package orchestrator

import (
	"context"

	"github.com/termsprawl/termsprawl/orchestrator/hostnodes"
	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/tools"
)

// hostTarget is a launch on a host (Launch's one sequence, launch.go):
// hostnodes.Target as a launchTarget.
type hostTarget struct{ t hostnodes.Target }

func (t hostTarget) host() string         { return t.t.Host() }
func (t hostTarget) defaultShell() string { return t.t.DefaultShell() }
func (t hostTarget) defaultCwd() string   { return t.t.DefaultCwd() }
func (t hostTarget) check(ctx context.Context, spec LaunchSpec) ([]tools.LogSpec, error) {
	return t.t.Check(ctx, spec)
}
func (t hostTarget) server(context.Context, *reservation) (hosts.Server, error) { return t.t.Server() }
func (t hostTarget) env(spec LaunchSpec, id string, _ hosts.Server) []string {
	return t.t.Env(spec, id)
}
func (t hostTarget) wrap(ctx context.Context, spec LaunchSpec, id string, argv []string) ([]string, error) {
	return t.t.Wrap(ctx, spec, id, argv)
}
func (t hostTarget) writeFiles(ctx context.Context, id string) error { return t.t.WriteFiles(ctx, id) }
func (t hostTarget) removeFiles(ctx context.Context, id string)      { t.t.RemoveFiles(ctx, id) }
func (t hostTarget) fail(err error) error                            { return t.t.Fail(err) }

// retry: a lost connection is the supervisor's to bring back.
func (hostTarget) retry(context.Context, hosts.Server, error) bool { return false }
