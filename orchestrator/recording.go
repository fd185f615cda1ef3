package orchestrator

import (
	"context"

	"github.com/termsprawl/termsprawl/orchestrator/traces"
	"github.com/termsprawl/termsprawl/tools"
)

// Recording a node (CONTRACT §13). The pump hands every decoded output
// byte to the node's Recorder before it decides how to mirror it, so a
// burst that the mirror skips is still recorded whole. Where output was
// lost to us (a backlog, a pause, a reflowing resize, the time the
// orchestrator was down) the recording gets the reseeded screen as a
// frame instead, and output from before that seed is not recorded again.
// A recorded node does not sleep: a sleeping node gets no output.

// TracesDir is the folder of recordings under the state dir.
const TracesDir = traces.TracesDir

// Record turns recording of a node on or off (terminal_record). Turning
// it on when it is on, or off when it is off, changes nothing and says
// where the recording is (or was).
func (o *Orchestrator) Record(ctx context.Context, id string, on bool) (tools.RecordResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.RecordResult{}, err
	}
	return n.Record(ctx, on)
}

// Mark adds a marker to a node's recording (terminal_mark).
func (o *Orchestrator) Mark(id, label string) (tools.MarkResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.MarkResult{}, err
	}
	return n.Mark(label)
}
