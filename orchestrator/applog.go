package orchestrator

import (
	"github.com/termsprawl/termsprawl/orchestrator/applog"
	"github.com/termsprawl/termsprawl/tools"
)

// The engine's side of orchestrator/applog: one follower per node with
// logs, started with its pump and ended with it.

// resolveLogs checks a launch's logs (applog.Resolve), the state dir
// forbidden: every caller of Launch gets the refusal, not only the tool
// server's (CheckLogs).
func (o *Orchestrator) resolveLogs(specs []tools.LogSpec, cwd string) ([]tools.LogSpec, error) {
	return applog.Resolve(specs, cwd, o.cfg.StateDir)
}

// CheckLogs is the check of a launch's logs with the state dir
// forbidden (applog.Resolve): the tool server refuses a launch with it
// before launching, with a clear error.
func (o *Orchestrator) CheckLogs(specs []tools.LogSpec, cwd string) error {
	_, err := o.resolveLogs(specs, cwd)
	return err
}
