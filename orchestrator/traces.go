package orchestrator

import (
	"github.com/termsprawl/termsprawl/orchestrator/traces"
	"github.com/termsprawl/termsprawl/tools"
)

// The trace tools (CONTRACT §13) are orchestrator/traces over the
// engine's registry (o.traces) and its budgeted renderer.

// FrameSpec says which moment of a trace to show, and how to draw it.
type FrameSpec = traces.FrameSpec

func (o *Orchestrator) traceTools() *traces.Tools {
	return &traces.Tools{StateDir: o.cfg.StateDir, Reg: o.traces, Render: o.renderPNG}
}

// TraceOpen opens a recording directory, a .zip of one or a bare .cast.
func (o *Orchestrator) TraceOpen(path string) (tools.TraceOpened, error) {
	return o.traceTools().Open(path)
}

// TraceClose closes an open trace and frees its memory; closed is false
// when it was not open (closed before, or evicted).
func (o *Orchestrator) TraceClose(id string) (tools.TraceClosed, error) {
	return o.traceTools().Close(id)
}

// TraceOverview summarises an open trace.
func (o *Orchestrator) TraceOverview(id string) (tools.TraceOverview, error) {
	return o.traceTools().Overview(id)
}

// TraceFrameAt rebuilds the screen at a moment of an open trace, through
// the same mirror as live nodes, with a screenshot when asked for.
func (o *Orchestrator) TraceFrameAt(id string, spec FrameSpec) (tools.TraceFrame, error) {
	return o.traceTools().FrameAt(id, spec)
}

// TraceDiff is the rows that changed between two moments of a trace.
func (o *Orchestrator) TraceDiff(id string, fromMS, toMS int64) (tools.Changes, error) {
	return o.traceTools().Diff(id, fromMS, toMS)
}
