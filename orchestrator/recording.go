package orchestrator

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/record"
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
	if !on {
		rec := n.Rec.Load()
		if rec == nil {
			return tools.RecordResult{Terminal: id, Path: n.LastRecording()}, nil
		}
		n.StopRecording()
		if err := n.SaveMeta(); err != nil {
			return tools.RecordResult{}, err
		}
		return tools.RecordResult{Terminal: id, Path: rec.Dir}, nil
	}
	if rec := n.Rec.Load(); rec != nil {
		return n.RecordResult(rec), nil
	}
	if status, _, gone := n.State(); gone || status == tools.StatusExited {
		return tools.RecordResult{}, tools.Errorf(tools.KindNotRun, "terminal %q has exited: there is nothing left to record", id)
	}
	req := node.RecStart{Reply: make(chan error, 1)}
	select {
	case n.RecReq <- req:
	case <-n.Closing:
		return tools.RecordResult{}, tools.Errorf(tools.KindNotFound, "terminal %q is closing", id)
	case <-ctx.Done():
		return tools.RecordResult{}, tools.Errorf(tools.KindTimeout, "record %q: %w", id, ctx.Err())
	}
	select {
	case err = <-req.Reply:
	case <-n.Done:
		return tools.RecordResult{}, tools.Errorf(tools.KindNotFound, "terminal %q closed before its recording started", id)
	}
	if err != nil {
		return tools.RecordResult{}, err
	}
	if err := n.SaveMeta(); err != nil {
		return tools.RecordResult{}, err
	}
	rec := n.Rec.Load()
	if rec == nil {
		return tools.RecordResult{}, tools.Errorf(tools.KindInternal, "the recording of %q stopped as it started (see the log)", id)
	}
	return n.RecordResult(rec), nil
}

// Mark adds a marker to a node's recording (terminal_mark).
func (o *Orchestrator) Mark(id, label string) (tools.MarkResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.MarkResult{}, err
	}
	rec := n.Rec.Load()
	if rec == nil {
		return tools.MarkResult{}, tools.Errorf(tools.KindNotRun, "terminal %q is not being recorded: turn it on with terminal_record {\"terminal\":%q,\"on\":true}", id, id).
			WithDetails("reason", "not-recording")
	}
	ms := rec.Recorder.Mark(label)
	return tools.MarkResult{Terminal: id, Label: record.ClipLabel(label), TMS: ms}, nil
}

// newRecordingDir picks <state>/traces/<name>-<UTC time>, with -2, -3 …
// when a recording of the same name started in the same second.
func (o *Orchestrator) newRecordingDir(name string, t time.Time) (string, error) {
	base := filepath.Join(o.cfg.StateDir, TracesDir, record.DirName(name, t))
	for i := 1; i <= 100; i++ {
		dir := base
		if i > 1 {
			dir = base + "-" + strconv.Itoa(i)
		}
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			return dir, nil
		}
	}
	return "", tools.Errorf(tools.KindRejected, "too many recordings named %s in one second", base)
}
