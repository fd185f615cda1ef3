package node

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Recording is a node's recording in progress.
type Recording struct {
	Recorder *record.Recorder
	Dir      string
	since    time.Time
	// stopped is closed when the recording ends on purpose (turned off,
	// the node closed, the orchestrator shut down): watchRecording ends.
	stopped chan struct{}
}

// recStart asks the pump to start recording; the pump answers on reply.
type recStart struct {
	Reply chan error
}

func (n *Node) recordResult(rec *Recording) tools.RecordResult {
	return tools.RecordResult{Terminal: n.Meta.ID, Recording: true, Path: rec.Dir, Since: rec.since.UTC().Format(time.RFC3339)}
}

// recordingStatus is NodeInfo.Recording.
func (n *Node) recordingStatus() *tools.RecordingStatus {
	rec := n.Rec.Load()
	if rec == nil {
		return nil
	}
	return &tools.RecordingStatus{Path: rec.Dir, Since: rec.since.UTC().Format(time.RFC3339)}
}

// lastRecording is the directory of the node's last recording, if any.
func (n *Node) lastRecording() string {
	n.Mu.Lock()
	defer n.Mu.Unlock()
	return n.lastRecDir
}

// saveMeta rewrites the node's metadata with the recording it has now, so
// a restarted orchestrator goes on recording it. On a full disk (the
// reason a recording stops) the atomic write has no room for its
// temporary file: the file is then rewritten in place, so it stops naming
// a recording that ended.
func (n *Node) saveMeta() error {
	m := n.Meta
	m.Recording = ""
	if rec := n.Rec.Load(); rec != nil {
		m.Recording = rec.Dir
	}
	if err := tools.WriteJSONAtomicOrInPlace(n.Env.MetaPath(m.ID), m); err != nil {
		return fmt.Errorf("write node metadata of %s: %w", m.ID, err)
	}
	return nil
}

// startRecording starts a new recording of the node, its first frame the
// mirror as it is. Only the pump goroutine (or attach, before the pump
// starts) calls it, with the mirror fresh: output from the stream
// position the mirror shows on goes to the recording.
func (n *Node) startRecording() error {
	now := time.Now()
	dir, err := record.NewDir(filepath.Join(n.Env.Limits().StateDir, record.TracesDir), n.Meta.Name, now)
	if err != nil {
		return err
	}
	snap := n.Snapshot()
	r, err := record.Start(dir, record.Meta{Node: n.Meta.ID, Command: n.Meta.Command,
		Columns: snap.Columns, Rows: snap.Rows, Start: now, Version: n.Env.Limits().Version})
	if err != nil {
		return tools.Errorf(tools.KindUnavailable, "start recording %s: %w", n.Meta.ID, err)
	}
	r.Reseed(snap, "start")
	n.adoptRecording(r, dir, now, snap.Columns, snap.Rows)
	n.Log.Info("recording", "dir", dir)
	return nil
}

// resumeRecording goes on with the recording in dir after a restart (or
// a detached control client): a gap event and the screen as it is now.
// Only attach calls it, before the pump starts.
func (n *Node) resumeRecording(dir string) {
	snap := n.Snapshot()
	r, err := record.Resume(dir, time.Now(), snap)
	if err != nil {
		n.Log.Warn("cannot go on recording; the node runs on unrecorded", "dir", dir, "err", err)
		n.Mu.Lock()
		n.lastRecDir = dir
		n.Mu.Unlock()
		if err := n.saveMeta(); err != nil {
			n.Log.Warn("recording", "err", err)
		}
		return
	}
	n.adoptRecording(r, dir, r.Start(), snap.Columns, snap.Rows)
	n.Log.Info("recording resumed", "dir", dir)
}

// adoptRecording makes r the node's recording from the mirror's stream
// position on, and watches it for failure. Pump goroutine (or attach).
func (n *Node) adoptRecording(r *record.Recorder, dir string, since time.Time, cols, rows int) {
	rec := &Recording{Recorder: r, Dir: dir, since: since, stopped: make(chan struct{})}
	n.recFrom = max(n.applied, n.dropUntil)
	n.recCols, n.recRows = cols, rows
	n.Mu.Lock()
	n.lastRecDir = dir
	n.Mu.Unlock()
	n.Rec.Store(rec)
	go n.watchRecording(rec)
}

// watchRecording ends a recording whose writes failed (a full disk): the
// error is logged, the node goes on unrecorded, and its metadata says so,
// so a restart does not try again. It runs per recording and ends when
// the recording fails or is stopped.
func (n *Node) watchRecording(rec *Recording) {
	select {
	case <-rec.stopped:
		return
	case <-rec.Recorder.Failed():
	}
	if !n.Rec.CompareAndSwap(rec, nil) {
		return // stopped meanwhile
	}
	close(rec.stopped)
	err := rec.Recorder.Close()
	n.Log.Error("recording stopped; the node runs on unrecorded", "dir", rec.Dir, "err", cmp.Or(rec.Recorder.Err(), err))
	if err := n.saveMeta(); err != nil {
		n.Log.Warn("recording", "err", err)
	}
}

// StopRecording ends the node's recording, if any, writing everything
// pending. Its metadata is the caller's business (saveMeta): a shutdown
// keeps it so a restart goes on recording.
func (n *Node) StopRecording() {
	rec := n.Rec.Swap(nil)
	if rec == nil {
		return
	}
	close(rec.stopped)
	if err := rec.Recorder.Close(); err != nil {
		n.Log.Warn("recording ended with an error", "dir", rec.Dir, "err", err)
	}
}

// recordOutput hands a chunk's bytes to the recording: all of them, also
// those the mirror skips, except output from before a frame (recFrom).
// Pump goroutine only.
func (n *Node) recordOutput(ch tmuxctl.Chunk) {
	rec := n.Rec.Load()
	if rec == nil || ch.Lost || len(ch.Data) == 0 {
		return
	}
	data := ch.Data
	if start := ch.Total - uint64(len(data)); start < n.recFrom {
		skip := n.recFrom - start
		if skip >= uint64(len(data)) {
			return
		}
		data = data[skip:]
	}
	rec.Recorder.Output(data)
}

// recordFrame paints the freshly seeded mirror into the recording after
// output was lost to us, and skips the output the seed already shows.
// Pump goroutine only, right after a successful reseed.
func (n *Node) recordFrame(reason string) {
	rec := n.Rec.Load()
	if rec == nil {
		return
	}
	snap := n.Snapshot()
	if snap.Columns != n.recCols || snap.Rows != n.recRows {
		rec.Recorder.Resize(snap.Columns, snap.Rows)
		n.recCols, n.recRows = snap.Columns, snap.Rows
	}
	rec.Recorder.Reseed(snap, reason)
	n.recFrom = max(n.recFrom, n.dropUntil)
}

// reseedFramed reseeds after output was lost and records the frame.
func (n *Node) reseedFramed(why string) {
	if err := n.reseed(context.Background()); err != nil {
		n.Log.Warn("reseed failed", "why", why, "err", err)
		return
	}
	n.recordFrame(why)
}

// serveRecStart starts a recording on the pump's goroutine: the mirror is
// brought up to date first when it is not (a burst, a sleeping node).
func (n *Node) serveRecStart(req recStart) {
	if n.Rec.Load() != nil {
		req.Reply <- nil
		return
	}
	if n.stale || n.Asleep.Load() || n.Scr.Asleep() { // a resting mirror too (rest.go)
		if err := n.reseed(context.Background()); err != nil {
			req.Reply <- n.TmuxErr("record", err)
			return
		}
	}
	req.Reply <- n.startRecording()
}

// RecordInputEvent notes an input in the recording by kind and size only
// (key names for presses): never its text.
func (n *Node) RecordInputEvent(kind string, size int, keys []string) {
	if rec := n.Rec.Load(); rec != nil {
		rec.Recorder.Input(kind, size, keys)
	}
}

// recordExit notes the program's exit in the recording.
func (n *Node) recordExit(code int) {
	if rec := n.Rec.Load(); rec != nil {
		c := n.CrashReport() // recorded before the exit is published (reseed)
		sig := ""
		if c != nil {
			sig = c.Signal
		}
		rec.Recorder.Exit(code, sig, c)
	}
}

// recordOnStart starts or resumes the node's recording as attach seeds
// its mirror: a launch with record, or metadata that names a recording
// (an adopted node, or one attached again).
func (n *Node) recordOnStart() error {
	switch {
	case n.Meta.Recording != "":
		n.resumeRecording(n.Meta.Recording)
	case n.RecordOnAttach:
		if err := n.startRecording(); err != nil {
			return err
		}
		if err := n.saveMeta(); err != nil {
			n.StopRecording()
			return err
		}
	}
	return nil
}
