package applog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
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
// default), an existing directory, a path that is not inside any of the
// forbidden directories (termsprawl's state dir: its session files hold
// tokens), also once symbolic links are resolved, and a file that, if it
// exists, is a readable regular file (opened without blocking: a FIFO is
// refused, never waited on). A file that does not exist yet is accepted
// and followed once it appears. Its errors are of kind usage and say what
// to fix.
func Resolve(specs []tools.LogSpec, cwd string, forbidden ...string) ([]tools.LogSpec, error) {
	roots := realRoots(forbidden)
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
		if root, ok := insideAny(realPath(p), roots); ok {
			return nil, usage("log %q (%s) is inside termsprawl's state directory %s: its files are never followed as logs; give a log file elsewhere", label, p, root)
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
			f, fi, err := tools.OpenRegular(p)
			if err != nil {
				return nil, usage("log %q (%s) cannot be read: %v; fix its permissions or give another file", label, p, errors.Unwrap(err))
			}
			why := refusal(f, fi, p, roots)
			f.Close()
			if why != "" {
				return nil, usage("log %q (%s) is refused: %s; give a log file elsewhere", label, p, why)
			}
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
	ready   chan struct{} // closed once the files were first opened (or found missing)
	log     *slog.Logger
	files   []*logFile
	roots   []string // forbidden directories, symbolic links resolved

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
// be watched, a read error, a file refused).
//
// Nothing in Follow touches the files: the watch and the first opens are
// made by the follower's own goroutine, which closes Ready when they are
// done, so a caller (adoption) never waits on a log. Every open — the
// first, and each of a file recreated or rotated under the name — is
// checked again: a regular file opened without blocking, not inside a
// forbidden directory (symbolic links resolved, on Linux the opened file's
// own path), and not a second hard link to a file on a forbidden
// directory's file system. A file refused is reported missing.
func Follow(logs []tools.LogSpec, scr Screen, done <-chan struct{}, log *slog.Logger, forbidden ...string) (*Follower, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lf := &Follower{scr: scr, done: done, stopped: make(chan struct{}), ready: make(chan struct{}), log: log,
		kept: make(chan struct{}), roots: realRoots(forbidden)}
	for _, s := range logs {
		lf.files = append(lf.files, &logFile{spec: s})
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("follow logs: %w", err)
	}
	go lf.run(w)
	return lf, nil
}

// Stopped is closed once the follower's goroutine has ended (after done
// closed) and closed its files.
func (lf *Follower) Stopped() <-chan struct{} { return lf.stopped }

// Ready is closed once the follower has watched its directories and first
// opened its files (at their end): lines written after it are followed.
func (lf *Follower) Ready() <-chan struct{} { return lf.ready }

// start watches the logs' directories and opens the files at their end.
func (lf *Follower) start(w *fsnotify.Watcher) {
	defer close(lf.ready)
	dirs := map[string]bool{}
	for _, lg := range lf.files {
		d := filepath.Dir(lg.spec.Path)
		if !dirs[d] {
			dirs[d] = true
			if err := w.Add(d); err != nil {
				lf.log.Warn("cannot watch a log's directory", "dir", d, "err", err)
			}
		}
		lf.open(lg, true)
	}
}

// open opens lg's file, at its end (atEnd) or its start, if it is a file
// the follower may read (refusal).
func (lf *Follower) open(lg *logFile, atEnd bool) {
	f, fi, err := tools.OpenRegular(lg.spec.Path)
	if err != nil {
		if errors.Is(err, tools.ErrNotRegularFile) {
			lf.log.Warn("log refused", "path", lg.spec.Path, "err", err)
		}
		lf.setMissing(lg, true)
		return
	}
	if why := refusal(f, fi, lg.spec.Path, lf.roots); why != "" {
		f.Close()
		lf.log.Warn("log refused", "path", lg.spec.Path, "why", why)
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

// realRoots resolves the forbidden directories' symbolic links (a root
// that does not resolve is kept as it is, cleaned).
func realRoots(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		out = append(out, realPath(d))
	}
	return out
}

// realPath is p with its symbolic links resolved, as far as it exists:
// the longest existing prefix is resolved and the rest appended.
func realPath(p string) string {
	p = filepath.Clean(p)
	if !filepath.IsAbs(p) {
		if a, err := filepath.Abs(p); err == nil {
			p = a
		}
	}
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// insideAny reports the root p is inside of (or is), if any.
func insideAny(p string, roots []string) (string, bool) {
	for _, r := range roots {
		rel, err := filepath.Rel(r, p)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return r, true
		}
	}
	return "", false
}

// openedPath is the path the kernel gives for the opened file (Linux's
// /proc/self/fd), or "" where there is none. SyscallConn, not Fd: Fd
// would put the file back in blocking mode.
func openedPath(f *os.File) string {
	rc, err := f.SyscallConn()
	if err != nil {
		return ""
	}
	var p string
	rc.Control(func(fd uintptr) {
		if l, err := os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10)); err == nil && filepath.IsAbs(l) {
			p = l
		}
	})
	return p
}

// refusal says why the opened file f (fi its fstat, p the path it was
// opened by) may not be followed, or "": it is inside a forbidden
// directory — by the path with its links resolved, and on Linux by the
// opened file's own path (/proc/self/fd), which no rename between the
// check and the open can fool — or it is a file with more than one hard
// link on a forbidden directory's file system (a hard link made outside
// to a session file).
func refusal(f *os.File, fi os.FileInfo, p string, roots []string) string {
	if len(roots) == 0 {
		return ""
	}
	paths := []string{realPath(p)}
	if fdPath := openedPath(f); fdPath != "" {
		paths = append(paths, fdPath)
	}
	for _, q := range paths {
		if root, ok := insideAny(q, roots); ok {
			return "it is inside termsprawl's state directory " + root
		}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink <= 1 {
		return ""
	}
	for _, r := range roots {
		var rs syscall.Stat_t
		if syscall.Stat(r, &rs) == nil && rs.Dev == st.Dev {
			return "it has " + strconv.FormatUint(uint64(st.Nlink), 10) + " hard links on the file system of termsprawl's state directory " + r + " (it may be one of its files)"
		}
	}
	return ""
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
	lf.start(w)
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
