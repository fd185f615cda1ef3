package tools

import "time"

// Recordings and traces (CONTRACT §13).

// RecordResult is terminal_record's value: whether the node is being
// recorded now, and into which directory (also when it was just turned
// off: where the recording is).
type RecordResult struct {
	Terminal  string `json:"terminal"`
	Recording bool   `json:"recording"`
	Path      string `json:"path"`
	Since     string `json:"since,omitempty"`
}

// MarkResult is terminal_mark's value: the marker and its time in the
// recording.
type MarkResult struct {
	Terminal string `json:"terminal"`
	Label    string `json:"label"`
	TMS      int64  `json:"t_ms"`
}

// TraceMeta is a recording's meta.json: what was recorded.
type TraceMeta struct {
	Format  int      `json:"format"`
	Node    string   `json:"node"`
	Command []string `json:"command"`
	// Columns and Rows are the size when the recording started (the cast
	// header's width and height); resizes are events.
	Columns int `json:"columns"`
	Rows    int `json:"rows"`
	// Start is the wall-clock time of offset 0: every time in the cast and
	// in events.jsonl is measured from it, across restarts.
	Start time.Time `json:"start"`
	// End is set when the recording was closed.
	End      time.Time `json:"end,omitzero"`
	ExitCode *int      `json:"exit_code,omitempty"`
	Signal   string    `json:"signal,omitempty"`
	Crash    *Crash    `json:"crash,omitempty"`
	// Version is termsprawl's version.
	Version string `json:"version"`
	// Resumes counts how often the recording was reopened after an
	// orchestrator restart.
	Resumes int `json:"resumes,omitempty"`
	// Error says why the recording stopped early (a write error such as a
	// full disk); the files hold what was written before it.
	Error string `json:"error,omitempty"`
}

// TraceOpened is trace_open's value: the id to pass to the other trace
// operations, and, when a ninth trace was opened or the memory budget was
// spent, the one (or ones) closed for it.
type TraceOpened struct {
	Trace   string    `json:"trace"`
	Path    string    `json:"path"`
	Meta    TraceMeta `json:"meta"`
	Evicted string    `json:"evicted,omitempty"`
	// AlsoEvicted are the further traces closed when one eviction did not
	// free enough of the memory budget.
	AlsoEvicted []string `json:"also_evicted,omitempty"`
}

// TraceClosed is trace_close's value: closed is false when the trace was
// no longer open (closed before, or evicted as the coldest).
type TraceClosed struct {
	Trace  string `json:"trace"`
	Closed bool   `json:"closed"`
}

// TraceOverview is trace_overview's value.
type TraceOverview struct {
	Trace       string        `json:"trace,omitempty"`
	DurationMS  int64         `json:"duration_ms"`
	Markers     []TraceMarker `json:"markers"`
	Inputs      []TraceInputs `json:"inputs"`
	Resizes     []TraceResize `json:"resizes"`
	Exit        *TraceExit    `json:"exit,omitempty"`
	Crash       *Crash        `json:"crash,omitempty"`
	Gaps        []TraceGap    `json:"gaps"`
	Events      int           `json:"events"`       // events in the cast
	OutputBytes int64         `json:"output_bytes"` // bytes of output in the cast
	// Truncated: the cast ends in a line that does not parse (the writer
	// was stopped mid-line); what comes before it is used.
	Truncated bool     `json:"truncated"`
	Warnings  []string `json:"warnings,omitempty"`
}

// TraceMarker is a marker of a recording.
type TraceMarker struct {
	TMS   int64  `json:"t_ms"`
	Label string `json:"label"`
}

// TraceInputs counts a recording's inputs of one kind.
type TraceInputs struct {
	Kind  string `json:"kind"`
	Count int    `json:"count"`
	Bytes int64  `json:"bytes"`
}

// TraceResize is a size change of a recording.
type TraceResize struct {
	TMS     int64 `json:"t_ms"`
	Columns int   `json:"columns"`
	Rows    int   `json:"rows"`
}

// TraceExit is how a recorded program ended.
type TraceExit struct {
	TMS      int64  `json:"t_ms"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Signal   string `json:"signal,omitempty"`
}

// TraceGap is a time the orchestrator was down: nothing was recorded.
type TraceGap struct {
	FromMS int64 `json:"from_ms"`
	ToMS   int64 `json:"to_ms"`
}

// TraceFrame is trace_frame_at's value: the screen at a moment of a
// recording, in terminal_snapshot's shape (its revision is the number of
// cast events applied), with a screenshot when asked for.
type TraceFrame struct {
	Trace  string `json:"trace"`
	TimeMS int64  `json:"time_ms"`
	Screen
	Image      string           `json:"image,omitempty"`
	Screenshot *ScreenshotFacts `json:"screenshot,omitempty"`
	// Semantic are the compact lines of the semantic tree committed last
	// before that moment, when the program published one (CONTRACT §22).
	Semantic []string `json:"semantic,omitempty"`
}
