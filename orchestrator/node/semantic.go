package node

import (
	"encoding/json"
)

// recordSemantic notes a commit in the node's recording.
func (n *Node) recordSemantic(rev uint64, tree json.RawMessage) {
	if rec := n.Rec.Load(); rec != nil {
		rec.Recorder.Semantic(rev, tree)
	}
}
