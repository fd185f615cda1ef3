package toolserver

import (
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/sandbox"
	"github.com/termsprawl/termsprawl/tools"
)

// Sandboxes (CONTRACT §27): which profile a launch runs under. The engine
// wraps the program; the tool server decides the profile, as it knows
// the caller.

// agentSandboxDefault is an agent launch's profile when none is asked:
// config.toml's [sandbox] default, else workspace.
func (s *Server) agentSandboxDefault() string {
	if p := s.eng.sandbox.SandboxSettings().Default; p != "" {
		return p
	}
	return string(sandbox.Workspace)
}

// sandboxFloor makes a launch by a node at least as strict as that
// node's own sandbox, whatever it asked for: what a sandboxed agent
// launches stays sandboxed. The operator's launches keep what they ask
// (none when they ask nothing: shells the human launches).
func (c *call) sandboxFloor(spec *orchestrator.LaunchSpec) {
	if c.caller.Role == tools.RoleOperator {
		return
	}
	floor := sandbox.None
	if m, ok := c.s.eng.sandbox.Meta(c.caller.Node); ok && m.Sandbox != "" {
		floor = sandbox.Profile(m.Sandbox)
	}
	spec.Sandbox = string(sandbox.AtLeast(sandbox.Profile(spec.Sandbox), floor))
}
