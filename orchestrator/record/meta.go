package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// The files of a recording directory.
const (
	MetaFile   = "meta.json"
	CastFile   = "session.cast"
	EventsFile = "events.jsonl"
)

// FormatVersion is the version of the recording directory layout written
// in meta.json.
const FormatVersion = 1

// Meta is meta.json: what was recorded (tools.TraceMeta, the value
// trace_open returns). It is written when the recording starts and
// rewritten atomically (temporary file and rename) on Exit, Resume and
// Close — in place when the disk is full (writeMeta).
type Meta = tools.TraceMeta

// Crash is the crash report of CONTRACT §11: a program that exited on its
// own with a non-zero code or a signal. Pasted text never appears in it,
// only its size.
type Crash = tools.Crash

// LastInput is the last input a crashed program received, by kind, with a
// summary that never holds typed or pasted text.
type LastInput = tools.InputSummary

// DirName is the directory name of a recording of node started at t:
// "<node>-<UTC time>", e.g. "build-20261201T101500Z". Characters other
// than letters, digits, '.', '_' and '-' in the node name become '_'.
func DirName(node string, t time.Time) string {
	var b strings.Builder
	for i, r := range node {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == '.' && i > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	name := b.String()
	if name == "" {
		name = "node"
	}
	return name + "-" + t.UTC().Format("20060102T150405Z")
}

// readMeta reads dir/meta.json.
func readMeta(dir string) (Meta, error) {
	raw, err := tools.ReadFileBounded(filepath.Join(dir, MetaFile), tools.MaxStateFileBytes)
	if err != nil {
		return Meta{}, err
	}
	var m Meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return Meta{}, fmt.Errorf("%s: %w", filepath.Join(dir, MetaFile), err)
	}
	return m, nil
}

// writeMeta writes dir/meta.json atomically: a temporary file in dir,
// synced, then renamed over the old one. On a full disk (no room for the
// temporary file) it rewrites the old file in place when the new content
// fits in its blocks: a recording stopped by a full disk still says why.
func writeMeta(dir string, m Meta) error {
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	raw = append(raw, '\n')
	err = writeMetaAtomic(dir, raw)
	if err != nil && tools.IsNoSpace(err) {
		if ierr := tools.RewriteInPlace(filepath.Join(dir, MetaFile), raw); ierr == nil {
			return nil
		}
	}
	return err
}

func writeMetaAtomic(dir string, raw []byte) error {
	tmp, err := os.CreateTemp(dir, ".meta-*.tmp")
	if err != nil {
		return err
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}
	if _, err := tmp.Write(raw); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, filepath.Join(dir, MetaFile)); err != nil {
		return err
	}
	ok = true
	return nil
}

// ReadMeta reads a recording directory's meta.json.
func ReadMeta(dir string) (Meta, error) { return readMeta(dir) }

// TracesDir is the folder of recordings under the state dir.
const TracesDir = "traces"

// NewDir picks a new recording's directory under traces:
// <traces>/<DirName(node, t)>, with -2, -3 … when a recording of the
// same name started in the same second.
func NewDir(traces, node string, t time.Time) (string, error) {
	base := filepath.Join(traces, DirName(node, t))
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
