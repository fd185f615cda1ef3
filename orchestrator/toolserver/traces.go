package toolserver

import (
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// Recordings of live terminals and traces of recorded ones (CONTRACT §13).
func traceHandlers() map[string]handler {
	return map[string]handler{
		"terminal_record": mutator(terminalRecord),
		"terminal_mark":   mutator(terminalMark),
		"trace_open":      reader(traceOpen),
		"trace_close":     reader(traceClose),
		"trace_overview":  reader(traceOverview),
		"trace_frame_at":  reader(traceFrameAt),
		"trace_diff":      reader(traceDiff),
	}
}

type recordArgs struct {
	terminalArg
	On bool `json:"on"`
}

func terminalRecord(c *call, a recordArgs) (tools.RecordResult, any, error) {
	r, err := c.s.eng.traces.Record(c.ctx, a.Terminal, a.On)
	if err != nil {
		return r, nil, err
	}
	return r, c.stateOf(a.Terminal), nil
}

type markArgs struct {
	terminalArg
	Label string `json:"label"`
}

func terminalMark(c *call, a markArgs) (tools.MarkResult, any, error) {
	m, err := c.s.eng.traces.Mark(a.Terminal, a.Label)
	if err != nil {
		return m, nil, err
	}
	return m, c.stateOf(a.Terminal), nil
}

type traceOpenArgs struct {
	Path string `json:"path"`
}

func traceOpen(c *call, a traceOpenArgs) (tools.TraceOpened, error) {
	return c.s.eng.traces.TraceOpen(a.Path)
}

type traceArg struct {
	Trace string `json:"trace"`
}

func traceClose(c *call, a traceArg) (tools.TraceClosed, error) {
	return c.s.eng.traces.TraceClose(a.Trace)
}

func traceOverview(c *call, a traceArg) (tools.TraceOverview, error) {
	return c.s.eng.traces.TraceOverview(a.Trace)
}

type frameArgs struct {
	traceArg
	TimeMS     *int64 `json:"time_ms"`
	Marker     string `json:"marker"`
	Screenshot bool   `json:"screenshot"`
	Scale      int    `json:"screenshot_scale"`
	Theme      string `json:"screenshot_theme"`
}

func traceFrameAt(c *call, a frameArgs) (tools.TraceFrame, error) {
	f, err := c.s.eng.traces.TraceFrameAt(a.Trace, orchestrator.FrameSpec{TimeMS: a.TimeMS, Marker: a.Marker,
		Screenshot: a.Screenshot, Scale: a.Scale, Theme: a.Theme})
	if err == nil {
		f.Semantic = c.s.eng.traces.TraceSemanticAt(a.Trace, f.TimeMS) // the tree of that moment (CONTRACT §22)
	}
	return f, err
}

type diffArgs struct {
	traceArg
	FromMS int64 `json:"from_ms"`
	ToMS   int64 `json:"to_ms"`
}

func traceDiff(c *call, a diffArgs) (tools.Changes, error) {
	return c.s.eng.traces.TraceDiff(a.Trace, a.FromMS, a.ToMS)
}
