package record

import (
	"encoding/json"
	"sort"
)

// Semantic tree commits in a recording (CONTRACT §22): each commit is an
// events.jsonl line {t_ms, type: "semantic", revision, tree}, beside the
// cast; a trace finds the tree of a moment among them.

// EventSemantic is the type of a semantic commit's event.
const EventSemantic = "semantic"

// Semantic records a semantic tree commit stamped with the screen revision.
func (r *Recorder) Semantic(revision uint64, tree json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.closed {
		return
	}
	r.addEvent(Event{TMS: r.nowMS(), Type: EventSemantic, Revision: revision, Tree: tree})
	r.kick()
}

// semanticEvents keeps the semantic commits of events, in time order.
func semanticEvents(events []Event) []Event {
	var out []Event
	for _, e := range events {
		if e.Type == EventSemantic && len(e.Tree) > 0 {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TMS < out[j].TMS })
	return out
}

// SemanticAt is the tree committed last at or before ms (nil when the
// program had published none by then) and its revision.
func (t *Trace) SemanticAt(ms int64) (json.RawMessage, uint64) {
	i := sort.Search(len(t.sem), func(i int) bool { return t.sem[i].TMS > ms })
	if i == 0 {
		return nil, 0
	}
	return t.sem[i-1].Tree, t.sem[i-1].Revision
}
