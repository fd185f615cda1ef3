package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// ErrNoRoomInPlace is returned by RewriteInPlace when the new content does
// not fit in the blocks the file already has.
var ErrNoRoomInPlace = errors.New("the new content does not fit in the file's blocks")

// RewriteInPlace writes data over the existing regular file at path,
// without creating any file: the fallback of an atomic write that failed
// because the disk is full (a temporary file needs a new block; rewriting
// a small file within the blocks it already has needs none). It refuses
// (ErrNoRoomInPlace) unless data fits in the file's allocated blocks, so
// a write can only fail before changing anything. Not atomic: a crash in
// the middle can leave a mix, which is why it is only a fallback.
func RewriteInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|openNonblock, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &notRegularError{what: describeFileMode(fi.Mode())}
	}
	if int64(len(data)) > allocatedBytes(fi) {
		return fmt.Errorf("rewrite %s in place: %w (%d bytes, %d allocated)", path, ErrNoRoomInPlace, len(data), allocatedBytes(fi))
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("rewrite %s in place: %w", path, err)
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		return fmt.Errorf("rewrite %s in place: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("rewrite %s in place: fsync: %w", path, err)
	}
	return nil
}

// WriteFileAtomicOrInPlace is WriteFileAtomic, and when that fails because
// the disk is full (IsNoSpace), RewriteInPlace of the existing file: a
// small state file (node metadata) can still say what changed on a full
// disk.
func WriteFileAtomicOrInPlace(path string, data []byte) error {
	err := WriteFileAtomic(path, data)
	if err == nil || !IsNoSpace(err) {
		return err
	}
	if ierr := RewriteInPlace(path, data); ierr != nil {
		return fmt.Errorf("%w (rewriting it in place failed too: %v)", err, ierr)
	}
	return nil
}

// WriteJSONAtomicOrInPlace marshals v (indented, as WriteJSONAtomic) and
// writes it with WriteFileAtomicOrInPlace.
func WriteJSONAtomicOrInPlace(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: marshal: %w", path, err)
	}
	return WriteFileAtomicOrInPlace(path, append(data, '\n'))
}
