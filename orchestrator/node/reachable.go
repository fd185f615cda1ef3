package node

import (
	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/tools"
)

// Reachable is nil unless the node's host cannot be reached now.
func (n *Node) Reachable() error {
	if n.Meta.Host == "" {
		if n.Client == nil {
			reason := n.Load().ExitReason
			return tools.Errorf(tools.KindUnavailable, "terminal %q is not mirrored: %s", n.Meta.ID, reason)
		}
		return nil
	}
	if status, _, _ := n.State(); status != tools.StatusUnreachable {
		return nil
	}
	e := tools.Errorf(tools.KindUnavailable, "terminal %q is on host %s, which is unreachable now (the program keeps running there; termsprawl reconnects): %w", n.Meta.ID, n.Meta.Host, hosts.ErrUnreachable).
		WithDetails("host", n.Meta.Host)
	e.Retryable = true
	return e
}
