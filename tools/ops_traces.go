package tools

import (
	"encoding/json"
	"strings"
)

// traceOperations are the rows of recordings and traces (CONTRACT §13).
func traceOperations() []*Operation {
	paramTrace := id("trace", "Trace id from trace_open.")
	return []*Operation{
		{Name: "terminal_record", Result: RecordResult{}, State: Snapshot{}, Topic: TopicTraces, Mutation: true, Annotations: annIdempotent,
			Description: "Turn recording of a terminal on or off: <state>/traces/<name>-<UTC time>/ gets session.cast (asciicast v2), events.jsonl and meta.json; it goes on across orchestrator restarts.",
			Params: []Param{paramTerminal,
				{Name: "on", Type: TypeBoolean, Required: true, Description: "true starts recording (no change if it records), false stops it."},
			}},
		{Name: "terminal_mark", Result: MarkResult{}, State: Snapshot{}, Topic: TopicTraces, Mutation: true, Annotations: annWrite,
			Description: "Add a marker to a terminal's recording (trace_frame_at {marker} finds it later); not_run when the terminal is not recorded.",
			Params: []Param{paramTerminal,
				{Name: "label", Type: TypeString, Required: true, NonEmpty: true, MaxLen: 800, Description: "The marker's label (kept to 200 characters)."},
			}},
		{Name: "trace_open", Result: TraceOpened{}, Topic: TopicTraces, Annotations: annRead,
			Description: "Open a recording for reading: its directory, a .zip of one, or a bare .cast; returns {trace, meta}. At most 8 are open, holding at most 256 MB of memory together (about 1.4 times their files' size, plus keyframes); opening past either limit closes the least recently used and names it in evicted. trace_close frees one.",
			Params: []Param{
				{Name: "path", Type: TypeString, Required: true, NonEmpty: true, MaxLen: 4096, Description: "Absolute path of the recording, or the name of a directory in <state>/traces (terminal_record returns it)."},
			}},
		{Name: "trace_close", Result: TraceClosed{}, Topic: TopicTraces, Annotations: annIdempotent,
			Description: "Close an open trace and free its memory (open traces share a memory budget; the coldest is closed when it is spent). Closing one already closed or evicted is not an error: closed is then false.",
			Params:      []Param{paramTrace}},
		{Name: "trace_overview", Result: TraceOverview{}, Topic: TopicTraces, Annotations: annRead,
			Description: "What a recording holds: duration, markers, inputs by kind (never their text), resizes, exit, crash and gaps while the orchestrator was down.",
			Params:      []Param{paramTrace}},
		{Name: "trace_frame_at", Result: TraceFrame{}, Topic: TopicTraces, Annotations: annRead,
			Description: "The screen at a moment of a recording (time_ms or marker; neither: the end), rebuilt through the same mirror as live terminals, in terminal_snapshot's shape; optionally with a screenshot.",
			Params: []Param{paramTrace,
				intParam("time_ms", "Milliseconds from the recording's start (every event up to and including it).", intPtr(0), nil),
				Param{Name: "marker", Type: TypeString, NonEmpty: true, MaxLen: 800, Description: "A marker's label: the screen when it was added (the first marker of that label)."},
				{Name: "screenshot", Type: TypeBoolean, Description: "Also return a PNG of the screen (base64 in value.image)."},
				intParam("screenshot_scale", "Screenshot scale, 1 to 4 (default 1).", intPtr(1), intPtr(4)),
				enumParam("screenshot_theme", "Screenshot colours (default dark).", "dark", "light"),
			},
			check: checkAtMostOne("time_ms", "marker")},
		{Name: "trace_diff", Result: Changes{}, Topic: TopicTraces, Annotations: annRead,
			Description: "Rows that differ between two moments of a recording, with their text at to_ms: terminal_capture_since's shape.",
			Params: []Param{paramTrace,
				required(intParam("from_ms", "Earlier moment, milliseconds from the start.", intPtr(0), nil)),
				required(intParam("to_ms", "Later moment, milliseconds from the start.", intPtr(0), nil)),
			}},
	}
}

// checkAtMostOne refuses a call that gives more than one of the named
// arguments.
func checkAtMostOne(names ...string) func(op *Operation, fields map[string]json.RawMessage) error {
	return func(op *Operation, fields map[string]json.RawMessage) error {
		var given []string
		for _, n := range names {
			if _, ok := fields[n]; ok {
				given = append(given, n)
			}
		}
		if len(given) > 1 {
			return Errorf(KindUsage, "%s: give %s, not both", op.Name, strings.Join(given, " or "))
		}
		return nil
	}
}
