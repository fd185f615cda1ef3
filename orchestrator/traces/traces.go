// Package traces is the engine's trace tools (CONTRACT §13): recordings
// reopened for reading through record's registry, their overview, the
// screen at a moment (drawn to PNG by the engine's budgeted renderer when
// asked) and the rows changed between two moments. It knows nothing of
// nodes.
package traces

import (
	"encoding/base64"
	"errors"
	"path/filepath"
	"strings"

	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// Recordings reopened for reading (CONTRACT §13). At most
// record.MaxOpenTraces are open at once, holding at most
// record.TraceMemoryBudget together, for the orchestrator's life; ids
// ("trace-1", …) do not survive a restart (open the path again).

// TracesDir is the folder of recordings under the state dir.
const TracesDir = record.TracesDir

// Tools are the trace tools over one registry.
type Tools struct {
	StateDir string
	Reg      *record.Registry
	// Render draws a screenshot (the engine's memory-budgeted renderer).
	Render func(render.Grid, render.Options) ([]byte, render.Facts, error)
}

func usage(format string, a ...any) error { return tools.Errorf(tools.KindUsage, format, a...) }

// tracePath resolves trace_open's path: an absolute path as it is, a bare
// name (no slash) in <state>/traces. Anything else is refused: the
// orchestrator has no working directory of the caller's.
func (x *Tools) tracePath(p string) (string, error) {
	switch {
	case filepath.IsAbs(p):
		return filepath.Clean(p), nil
	case !strings.ContainsRune(p, '/') && p != "." && p != "..":
		return filepath.Join(x.StateDir, TracesDir, p), nil
	}
	return "", usage("trace path %q is relative: give an absolute path, or the name of a recording in %s", p, filepath.Join(x.StateDir, TracesDir))
}

// Open opens a recording directory, a .zip of one or a bare .cast.
func (x *Tools) Open(path string) (tools.TraceOpened, error) {
	p, err := x.tracePath(path)
	if err != nil {
		return tools.TraceOpened{}, err
	}
	id, t, evicted, err := x.Reg.Open(p)
	if err != nil {
		return tools.TraceOpened{}, err
	}
	// Keyframes are built in the background while the caller reads the
	// overview, so the first trace_frame_at near the end does not replay
	// the whole cast. The goroutine ends when they are built or the trace
	// is closed (also while it waits its turn: Warm then returns at once).
	go func() {
		// One trace warms at a time: a replay makes several times its
		// cast in short-lived garbage, and four at once multiplied the
		// process's peak.
		warmSlot <- struct{}{}
		defer func() { <-warmSlot }()
		t.Warm()
	}()
	opened := tools.TraceOpened{Trace: id, Path: t.Path(), Meta: t.Meta()}
	if len(evicted) > 0 {
		opened.Evicted, opened.AlsoEvicted = evicted[0], evicted[1:]
	}
	return opened, nil
}

// Close closes an open trace and frees its memory; closed is false
// when it was not open (closed before, or evicted).
func (x *Tools) Close(id string) (tools.TraceClosed, error) {
	if err := x.Reg.Close(id); err != nil {
		if tools.KindOf(err) == tools.KindNotFound {
			return tools.TraceClosed{Trace: id}, nil
		}
		return tools.TraceClosed{}, err
	}
	return tools.TraceClosed{Trace: id, Closed: true}, nil
}

// warmSlot lets one trace build its keyframes at a time (Open), across
// every engine of the process.
var warmSlot = make(chan struct{}, 1)

// Overview summarises an open trace.
func (x *Tools) Overview(id string) (tools.TraceOverview, error) {
	t, err := x.Reg.Get(id)
	if err != nil {
		return tools.TraceOverview{}, err
	}
	ov := t.Overview()
	ov.Trace = id
	return ov, nil
}

// FrameSpec says which moment of a trace to show, and how to draw it.
type FrameSpec struct {
	TimeMS     *int64
	Marker     string
	Screenshot bool
	Scale      int
	Theme      string
}

// FrameAt rebuilds the screen at a moment of an open trace, through
// the same mirror as live nodes, with a screenshot when asked for.
func (x *Tools) FrameAt(id string, spec FrameSpec) (tools.TraceFrame, error) {
	if spec.TimeMS != nil && spec.Marker != "" {
		return tools.TraceFrame{}, usage("give time_ms or marker, not both")
	}
	t, err := x.Reg.Get(id)
	if err != nil {
		return tools.TraceFrame{}, err
	}
	if !spec.Screenshot {
		s, at, err := t.FrameAt(spec.TimeMS, spec.Marker)
		if err != nil {
			return tools.TraceFrame{}, err
		}
		return tools.TraceFrame{Trace: id, TimeMS: at, Screen: s}, nil
	}
	var (
		s    tools.Screen
		img  []byte
		f    render.Facts
		rerr error
	)
	at, err := t.WithFrame(spec.TimeMS, spec.Marker, func(scr *screen.Screen) {
		s = scr.Snapshot()
		img, f, rerr = x.Render(scr.Cells(), render.Options{Scale: spec.Scale, Theme: spec.Theme})
	})
	if err != nil {
		return tools.TraceFrame{}, err
	}
	switch {
	case errors.Is(rerr, tools.ErrMemoryBudget):
		return tools.TraceFrame{}, rerr
	case errors.Is(rerr, render.ErrTooLarge):
		return tools.TraceFrame{}, tools.Errorf(tools.KindRejected, "screenshot of %s: %w", id, rerr).WithDetails("reason", "capacity")
	case rerr != nil:
		return tools.TraceFrame{}, tools.Errorf(tools.KindUsage, "screenshot of %s: %w", id, rerr)
	}
	return tools.TraceFrame{Trace: id, TimeMS: at, Screen: s, Image: base64.StdEncoding.EncodeToString(img),
		Screenshot: &tools.ScreenshotFacts{Width: f.Width, Height: f.Height, SelfContained: f.SelfContained, FallbackCharacters: f.FallbackCharacters}}, nil
}

// Diff is the rows that changed between two moments of a trace.
func (x *Tools) Diff(id string, fromMS, toMS int64) (tools.Changes, error) {
	t, err := x.Reg.Get(id)
	if err != nil {
		return tools.Changes{}, err
	}
	return t.Diff(fromMS, toMS)
}
