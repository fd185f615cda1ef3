package orchestrator

import (
	"encoding/json"
)

// recordSemantic notes a commit in the node's recording.
func (n *node) recordSemantic(rev uint64, tree json.RawMessage) {
	if rec := n.rec.Load(); rec != nil {
		rec.r.Semantic(rev, tree)
	}
}
