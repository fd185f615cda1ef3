package orchestrator

// hooks are the node's engine's test seams; none for a node built without
// an engine (unit tests of one node).
func (n *node) hooks() *hooks {
	if n.o == nil || n.o.hooks == nil {
		return &hooks{}
	}
	return n.o.hooks
}
