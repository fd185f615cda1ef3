package orchestrator

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// recording is a node's recording in progress.
type recording struct {
	r     *record.Recorder
	dir   string
	since time.Time
	// stopped is closed when the recording ends on purpose (turned off,
	// the node closed, the orchestrator shut down): watchRecording ends.
	stopped chan struct{}
}

// recStart asks the pump to start recording; the pump answers on reply.
type recStart struct {
	reply chan error
}

func (n *node) recordResult(rec *recording) tools.RecordResult {
	return tools.RecordResult{Terminal: n.meta.ID, Recording: true, Path: rec.dir, Since: rec.since.UTC().Format(time.RFC3339)}
}

// recordingStatus is NodeInfo.Recording.
func (n *node) recordingStatus() *tools.RecordingStatus {
	rec := n.rec.Load()
	if rec == nil {
		return nil
	}
	return &tools.RecordingStatus{Path: rec.dir, Since: rec.since.UTC().Format(time.RFC3339)}
}

// lastRecording is the directory of the node's last recording, if any.
func (n *node) lastRecording() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lastRecDir
}

// saveMeta rewrites the node's metadata with the recording it has now, so
// a restarted orchestrator goes on recording it. On a full disk (the
// reason a recording stops) the atomic write has no room for its
// temporary file: the file is then rewritten in place, so it stops naming
// a recording that ended.
func (n *node) saveMeta() error {
	m := n.meta
	m.Recording = ""
	if rec := n.rec.Load(); rec != nil {
		m.Recording = rec.dir
	}
	if err := tools.WriteJSONAtomicOrInPlace(n.env.MetaPath(m.ID), m); err != nil {
		return fmt.Errorf("write node metadata of %s: %w", m.ID, err)
	}
	return nil
}

// startRecording starts a new recording of the node, its first frame the
// mirror as it is. Only the pump goroutine (or attach, before the pump
// starts) calls it, with the mirror fresh: output from the stream
// position the mirror shows on goes to the recording.
func (n *node) startRecording() error {
	now := time.Now()
	dir, err := n.env.NewRecordingDir(n.meta.Name, now)
	if err != nil {
		return err
	}
	snap := n.snapshot()
	r, err := record.Start(dir, record.Meta{Node: n.meta.ID, Command: n.meta.Command,
		Columns: snap.Columns, Rows: snap.Rows, Start: now, Version: n.env.Limits().Version})
	if err != nil {
		return tools.Errorf(tools.KindUnavailable, "start recording %s: %w", n.meta.ID, err)
	}
	r.Reseed(snap, "start")
	n.adoptRecording(r, dir, now, snap.Columns, snap.Rows)
	n.log.Info("recording", "dir", dir)
	return nil
}

// resumeRecording goes on with the recording in dir after a restart (or
// a detached control client): a gap event and the screen as it is now.
// Only attach calls it, before the pump starts.
func (n *node) resumeRecording(dir string) {
	snap := n.snapshot()
	r, err := record.Resume(dir, time.Now(), snap)
	if err != nil {
		n.log.Warn("cannot go on recording; the node runs on unrecorded", "dir", dir, "err", err)
		n.mu.Lock()
		n.lastRecDir = dir
		n.mu.Unlock()
		if err := n.saveMeta(); err != nil {
			n.log.Warn("recording", "err", err)
		}
		return
	}
	n.adoptRecording(r, dir, r.Start(), snap.Columns, snap.Rows)
	n.log.Info("recording resumed", "dir", dir)
}

// adoptRecording makes r the node's recording from the mirror's stream
// position on, and watches it for failure. Pump goroutine (or attach).
func (n *node) adoptRecording(r *record.Recorder, dir string, since time.Time, cols, rows int) {
	rec := &recording{r: r, dir: dir, since: since, stopped: make(chan struct{})}
	n.recFrom = max(n.applied, n.dropUntil)
	n.recCols, n.recRows = cols, rows
	n.mu.Lock()
	n.lastRecDir = dir
	n.mu.Unlock()
	n.rec.Store(rec)
	go n.watchRecording(rec)
}

// watchRecording ends a recording whose writes failed (a full disk): the
// error is logged, the node goes on unrecorded, and its metadata says so,
// so a restart does not try again. It runs per recording and ends when
// the recording fails or is stopped.
func (n *node) watchRecording(rec *recording) {
	select {
	case <-rec.stopped:
		return
	case <-rec.r.Failed():
	}
	if !n.rec.CompareAndSwap(rec, nil) {
		return // stopped meanwhile
	}
	close(rec.stopped)
	err := rec.r.Close()
	n.log.Error("recording stopped; the node runs on unrecorded", "dir", rec.dir, "err", cmp.Or(rec.r.Err(), err))
	if err := n.saveMeta(); err != nil {
		n.log.Warn("recording", "err", err)
	}
}

// stopRecording ends the node's recording, if any, writing everything
// pending. Its metadata is the caller's business (saveMeta): a shutdown
// keeps it so a restart goes on recording.
func (n *node) stopRecording() {
	rec := n.rec.Swap(nil)
	if rec == nil {
		return
	}
	close(rec.stopped)
	if err := rec.r.Close(); err != nil {
		n.log.Warn("recording ended with an error", "dir", rec.dir, "err", err)
	}
}

// recordOutput hands a chunk's bytes to the recording: all of them, also
// those the mirror skips, except output from before a frame (recFrom).
// Pump goroutine only.
func (n *node) recordOutput(ch tmuxctl.Chunk) {
	rec := n.rec.Load()
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
	rec.r.Output(data)
}

// recordFrame paints the freshly seeded mirror into the recording after
// output was lost to us, and skips the output the seed already shows.
// Pump goroutine only, right after a successful reseed.
func (n *node) recordFrame(reason string) {
	rec := n.rec.Load()
	if rec == nil {
		return
	}
	snap := n.snapshot()
	if snap.Columns != n.recCols || snap.Rows != n.recRows {
		rec.r.Resize(snap.Columns, snap.Rows)
		n.recCols, n.recRows = snap.Columns, snap.Rows
	}
	rec.r.Reseed(snap, reason)
	n.recFrom = max(n.recFrom, n.dropUntil)
}

// reseedFramed reseeds after output was lost and records the frame.
func (n *node) reseedFramed(why string) {
	if err := n.reseed(context.Background()); err != nil {
		n.log.Warn("reseed failed", "why", why, "err", err)
		return
	}
	n.recordFrame(why)
}

// serveRecStart starts a recording on the pump's goroutine: the mirror is
// brought up to date first when it is not (a burst, a sleeping node).
func (n *node) serveRecStart(req recStart) {
	if n.rec.Load() != nil {
		req.reply <- nil
		return
	}
	if n.stale || n.asleep.Load() || n.scr.Asleep() { // a resting mirror too (rest.go)
		if err := n.reseed(context.Background()); err != nil {
			req.reply <- n.tmuxErr("record", err)
			return
		}
	}
	req.reply <- n.startRecording()
}

// recordInputEvent notes an input in the recording by kind and size only
// (key names for presses): never its text.
func (n *node) recordInputEvent(kind string, size int, keys []string) {
	if rec := n.rec.Load(); rec != nil {
		rec.r.Input(kind, size, keys)
	}
}

// recordExit notes the program's exit in the recording.
func (n *node) recordExit(code int) {
	if rec := n.rec.Load(); rec != nil {
		c := n.crashReport() // recorded before the exit is published (reseed)
		sig := ""
		if c != nil {
			sig = c.Signal
		}
		rec.r.Exit(code, sig, c)
	}
}

// recordOnStart starts or resumes the node's recording as attach seeds
// its mirror: a launch with record, or metadata that names a recording
// (an adopted node, or one attached again).
func (n *node) recordOnStart() error {
	switch {
	case n.meta.Recording != "":
		n.resumeRecording(n.meta.Recording)
	case n.recordOnAttach:
		if err := n.startRecording(); err != nil {
			return err
		}
		if err := n.saveMeta(); err != nil {
			n.stopRecording()
			return err
		}
	}
	return nil
}
