package applog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/termsprawl/termsprawl/tools"
)

// MaxLineBytes caps one log line; the rest of a longer line is dropped
// (the kept part ends in "…").
const MaxLineBytes = 4096

// logChunk is how much of a file is read at once.
const logChunk = 64 << 10

func usage(format string, a ...any) error { return tools.Errorf(tools.KindUsage, format, a...) }

// Resolve checks a launch's logs before anything exists: absolute paths
// (relative ones against cwd), unique labels (a file's base name by
// default), an existing directory, and a file that, if it exists, is a
// readable regular file. A file that does not exist yet is accepted and
// followed once it appears. Its errors are of kind usage and say what to
// fix.
func Resolve(specs []tools.LogSpec, cwd string) ([]tools.LogSpec, error) {
	if len(specs) > tools.MaxLogs {
		return nil, usage("%d logs: at most %d per terminal", len(specs), tools.MaxLogs)
	}
	out := make([]tools.LogSpec, 0, len(specs))
	labels := map[string]bool{}
	for _, s := range specs {
		p := s.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		p = filepath.Clean(p)
		label := s.Label
		if label == "" {
			label = filepath.Base(p)
		}
		if labels[label] {
			return nil, usage("two logs are labelled %q: give each log its own label", label)
		}
		labels[label] = true
		if fi, err := os.Stat(filepath.Dir(p)); err != nil || !fi.IsDir() {
			return nil, usage("log %q: its directory %s does not exist; create it first (a missing file is fine, a missing directory cannot be watched)", label, filepath.Dir(p))
		}
		fi, err := os.Stat(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			// followed once the program creates it
		case err != nil:
			return nil, usage("log %q (%s) cannot be read: %v", label, p, err)
		case fi.IsDir():
			return nil, usage("log %q (%s) is a directory: give the path of a log file", label, p)
		case !fi.Mode().IsRegular():
			return nil, usage("log %q (%s) is not a regular file (%s): give the path of a log file", label, p, fi.Mode().Type())
		default:
			f, err := os.Open(p)
			if err != nil {
				return nil, usage("log %q (%s) cannot be read: %v; fix its permissions or give another file", label, p, errors.Unwrap(err))
			}
			f.Close()
		}
		out = append(out, tools.LogSpec{Path: p, Label: label})
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// logEntry is a kept line and the node's revision when it was read.
type logEntry struct {
	rev  uint64
	line tools.LogLine
}

// dropRun counts lines read at revision rev that are no longer kept.
type dropRun struct {
	rev uint64
	n   int
}

// maxDropRuns bounds the bookkeeping of dropped lines; older runs merge
// into their successor (a cursor between them then counts a few too many
// as omitted, never too few).
const maxDropRuns = 4096

// Screen is what a follower needs of the mirror whose captures carry the
// logs (*screen.Screen is one): the revision that stamps a line when it is
// read, a mark that starts a new revision, and the screen's changes.
type Screen interface {
	Revision() uint64
	Mark() uint64
	ChangesSince(rev uint64) (tools.Changes, error)
}

// Follower follows one node's logs. Its goroutine (run) owns the files
// and the watcher and ends when done closes (the node's pump ended).
type Follower struct {
	scr     Screen
	done    <-chan struct{}
	stopped chan struct{} // closed when run has returned and closed every file
	log     *slog.Logger
	files   []*logFile

	mu      sync.Mutex // guards entries, dropped, kept, and each logFile's missing flag
	entries []logEntry // oldest first, at most tools.MaxLogLines
	dropped []dropRun
	kept    chan struct{} // closed (and replaced) whenever lines were kept or a file went missing or came back
}

// logFile is one followed file. f, off, partial, skipping and ino are only
// touched by the follower's goroutine.
type logFile struct {
	spec     tools.LogSpec
	f        *os.File
	off      int64
	ino      uint64
	partial  []byte
	skipping bool // inside a line longer than MaxLineBytes
	gone     bool // f was renamed or removed: read on until a new file appears
	missing  bool // guarded by Follower.mu
}

// Follow starts following logs (resolved by Resolve) from their current
// end until done closes. Lines are stamped with scr's revision when they
// are read; log gets what goes wrong on the way (a directory that cannot
// be watched, a read error).
func Follow(logs []tools.LogSpec, scr Screen, done <-chan struct{}, log *slog.Logger) (*Follower, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lf := &Follower{scr: scr, done: done, stopped: make(chan struct{}), log: log, kept: make(chan struct{})}
	for _, s := range logs {
		lf.files = append(lf.files, &logFile{spec: s})
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("follow logs: %w", err)
	}
	dirs := map[string]bool{}
	for _, lg := range lf.files {
		d := filepath.Dir(lg.spec.Path)
		if !dirs[d] {
			dirs[d] = true
			if err := w.Add(d); err != nil {
				log.Warn("cannot watch a log's directory", "dir", d, "err", err)
			}
		}
		lf.open(lg, true)
	}
	go lf.run(w)
	return lf, nil
}

// Stopped is closed once the follower's goroutine has ended (after done
// closed) and closed its files.
func (lf *Follower) Stopped() <-chan struct{} { return lf.stopped }

// open opens lg's file, at its end (atEnd) or its start.
func (lf *Follower) open(lg *logFile, atEnd bool) {
	f, err := os.Open(lg.spec.Path)
	if err != nil {
		lf.setMissing(lg, true)
		return
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		lf.setMissing(lg, true)
		return
	}
	lg.f, lg.off, lg.partial, lg.skipping = f, 0, nil, false
	lg.ino = inode(fi)
	if atEnd {
		lg.off = fi.Size()
	}
	lf.setMissing(lg, false)
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

func (lf *Follower) setMissing(lg *logFile, missing bool) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lg.missing != missing {
		lg.missing = missing
		lf.notify()
	}
}

// notify wakes whoever waits for the follower to change. Called with mu held.
func (lf *Follower) notify() {
	close(lf.kept)
	lf.kept = make(chan struct{})
}

// Changed returns the channel closed at the follower's next change: lines
// kept, or a file gone missing or back.
func (lf *Follower) Changed() <-chan struct{} {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	return lf.kept
}

// run reacts to the directories' events until done closes.
func (lf *Follower) run(w *fsnotify.Watcher) {
	defer func() {
		w.Close()
		for _, lg := range lf.files {
			if lg.f != nil {
				lg.f.Close()
			}
		}
		close(lf.stopped)
	}()
	for {
		select {
		case <-lf.done:
			return
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			lf.log.Debug("log watcher", "err", err)
			// Events may have been lost (queue overflow): read everything.
			for _, lg := range lf.files {
				lf.event(lg, fsnotify.Write)
			}
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			name := filepath.Clean(ev.Name)
			for _, lg := range lf.files {
				switch {
				case lg.spec.Path == name:
					lf.event(lg, ev.Op)
				case lg.gone:
					// Perhaps a write to the file under its rotated name.
					lf.read(lg)
				}
			}
		}
	}
}

// event handles one change to lg's name.
func (lf *Follower) event(lg *logFile, op fsnotify.Op) {
	switch {
	case op.Has(fsnotify.Remove) || op.Has(fsnotify.Rename):
		// Rotated away or deleted: the program may still write to the
		// file it has open, so keep reading it until a new file appears.
		lf.read(lg)
		lg.gone = lg.f != nil
		lf.setMissing(lg, true)
	case op.Has(fsnotify.Create):
		if lg.f != nil {
			if fi, err := os.Stat(lg.spec.Path); err == nil && inode(fi) == lg.ino {
				lg.gone = false
				lf.setMissing(lg, false)
				lf.read(lg)
				return
			}
			lf.read(lg) // the rest of the old file
			lg.f.Close()
			lg.f, lg.gone = nil, false
		}
		lf.open(lg, false) // a new file: everything in it is new
		lf.read(lg)
	case op.Has(fsnotify.Write):
		if lg.f == nil || lg.gone {
			// Created without a Create event seen (or one lost).
			lf.event(lg, fsnotify.Create)
			return
		}
		lf.read(lg)
	}
}

// read reads lg from its offset to the end, in chunks, keeping the lines.
func (lf *Follower) read(lg *logFile) {
	if lg.f == nil {
		return
	}
	if fi, err := lg.f.Stat(); err == nil && fi.Size() < lg.off {
		// Truncated (copytruncate rotation, or `> file`): start again.
		lg.off, lg.partial, lg.skipping = 0, nil, false
	}
	buf := make([]byte, logChunk)
	for {
		k, err := lg.f.ReadAt(buf, lg.off)
		if k > 0 {
			lg.off += int64(k)
			lf.keep(lg, lf.split(lg, buf[:k]))
		}
		if err != nil || k < len(buf) {
			if err != nil && !errors.Is(err, io.EOF) {
				lf.log.Debug("read log", "path", lg.spec.Path, "err", err)
			}
			return
		}
	}
}

// split cuts data into complete lines, carrying a partial last line.
func (lf *Follower) split(lg *logFile, data []byte) []string {
	var lines []string
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if !lg.skipping {
				lg.partial = append(lg.partial, data...)
				if len(lg.partial) > MaxLineBytes {
					lines = append(lines, logText(lg.partial[:MaxLineBytes])+"…")
					lg.partial, lg.skipping = nil, true
				}
			}
			break
		}
		if !lg.skipping {
			line := append(lg.partial, data[:i]...)
			if len(line) > MaxLineBytes {
				lines = append(lines, logText(line[:MaxLineBytes])+"…")
			} else {
				lines = append(lines, logText(line))
			}
		}
		lg.partial, lg.skipping = nil, false
		data = data[i+1:]
	}
	return lines
}

func logText(b []byte) string {
	return strings.ToValidUTF8(strings.TrimSuffix(string(b), "\r"), "\uFFFD")
}

// keep stamps lines with the screen's current revision and keeps the last
// tools.MaxLogLines. The revision is read under mu: ChangesSince relies on it.
func (lf *Follower) keep(lg *logFile, lines []string) {
	if len(lines) == 0 {
		return
	}
	ms := time.Now().UnixMilli()
	lf.mu.Lock()
	defer lf.mu.Unlock()
	rev := lf.scr.Revision()
	if extra := len(lines) - tools.MaxLogLines; extra > 0 {
		lf.drop(rev, extra)
		lines = lines[extra:]
	}
	for _, l := range lines {
		lf.entries = append(lf.entries, logEntry{rev: rev, line: tools.LogLine{MS: ms, Label: lg.spec.Label, Line: l}})
	}
	if extra := len(lf.entries) - tools.MaxLogLines; extra > 0 {
		for _, e := range lf.entries[:extra] {
			lf.drop(e.rev, 1)
		}
		lf.entries = append(lf.entries[:0], lf.entries[extra:]...)
	}
	lf.notify()
}

// drop counts n lines of revision rev as no longer kept. Called with mu held.
func (lf *Follower) drop(rev uint64, n int) {
	if k := len(lf.dropped); k > 0 && lf.dropped[k-1].rev == rev {
		lf.dropped[k-1].n += n
		return
	}
	lf.dropped = append(lf.dropped, dropRun{rev: rev, n: n})
	if len(lf.dropped) > maxDropRuns {
		lf.dropped[1].n += lf.dropped[0].n
		lf.dropped = lf.dropped[1:]
	}
}

// ChangesSince is the screen's changes since cursor plus the log lines
// read at revisions from cursor on, and how many of those are no longer
// kept (LogsOmitted, always set).
//
// A line read while the screen stays at revision R is stamped R; a
// capture that would answer R while such lines exist first starts a new
// revision (Screen.Mark), so its answer R+1 is a cursor after every line
// it returns and before every line read later: no line is returned twice
// or never.
func (lf *Follower) ChangesSince(cursor uint64) (tools.Changes, error) {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if k := len(lf.entries); k > 0 && lf.entries[k-1].rev >= lf.scr.Revision() {
		lf.scr.Mark()
	}
	ch, err := lf.scr.ChangesSince(cursor)
	if err != nil {
		return ch, err
	}
	ch.Logs = []tools.LogLine{}
	for _, e := range lf.entries {
		if e.rev >= cursor {
			ch.Logs = append(ch.Logs, e.line)
		}
	}
	omitted := 0
	for _, d := range lf.dropped {
		if d.rev >= cursor {
			omitted += d.n
		}
	}
	ch.LogsOmitted = &omitted
	return ch, nil
}

// Labels are the followed logs' labels and those whose file is missing.
func (lf *Follower) Labels() (labels, missing []string) {
	labels = []string{}
	lf.mu.Lock()
	defer lf.mu.Unlock()
	for _, lg := range lf.files {
		labels = append(labels, lg.spec.Label)
		if lg.missing {
			missing = append(missing, lg.spec.Label)
		}
	}
	return labels, missing
}
