package monitor

import (
	"encoding/json"
	"net/http"

	"github.com/termsprawl/termsprawl/tools"
)

// The semantic tree beside the screen (CONTRACT §22): the page asks for
// the shown node's latest tree at semantic?node=ID and outlines the
// bounds of the node under the pointer. Read-only like everything here.

// SemanticSource is implemented by an Engine that knows the nodes'
// semantic trees.
type SemanticSource interface {
	// SemanticTree is the latest commit of node id: its revision and its
	// nodes in reading order (Line carries the depth as indentation);
	// false when the program published none.
	SemanticTree(id string) (rev uint64, nodes []tools.SemanticMatch, ok bool)
}

// semanticMsg is the answer to semantic?node=ID.
type semanticMsg struct {
	Node      string                `json:"node"`
	Available bool                  `json:"available"`
	Revision  uint64                `json:"revision"`
	Nodes     []tools.SemanticMatch `json:"nodes"`
}

func (m *Monitor) semantic(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		if k != "node" {
			refuse(w, http.StatusBadRequest, "unknown parameter %q: semantic takes only node=NODE", clip(k))
			return
		}
	}
	id := q.Get("node")
	if !tools.ValidNodeID(id) {
		refuse(w, http.StatusBadRequest, "node=%q is not a node id", clip(id))
		return
	}
	msg := semanticMsg{Node: id, Nodes: []tools.SemanticMatch{}}
	if src, ok := m.cfg.Engine.(SemanticSource); ok {
		if rev, nodes, ok := src.SemanticTree(id); ok {
			msg.Available, msg.Revision, msg.Nodes = true, rev, nodes
		}
	}
	data, _ := json.Marshal(msg)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'")
	_, _ = w.Write(data)
}
