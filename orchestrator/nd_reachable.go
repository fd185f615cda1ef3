package orchestrator

import "github.com/termsprawl/termsprawl/tools"

// reachable is nil unless the node's host cannot be reached now.
func (n *node) reachable() error {
	if n.meta.Host == "" {
		if n.client == nil {
			reason := n.load().exitReason
			return tools.Errorf(tools.KindUnavailable, "terminal %q is not mirrored: %s", n.meta.ID, reason)
		}
		return nil
	}
	if status, _, _ := n.state(); status != tools.StatusUnreachable {
		return nil
	}
	e := tools.Errorf(tools.KindUnavailable, "terminal %q is on host %s, which is unreachable now (the program keeps running there; termsprawl reconnects): %w", n.meta.ID, n.meta.Host, ErrHostUnreachable).
		WithDetails("host", n.meta.Host)
	e.Retryable = true
	return e
}
