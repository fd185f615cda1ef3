package tools

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxStateFileBytes caps the small JSON files of the state directory that
// ReadSession, ReadEndpoint and ReadPreferences read (a few hundred bytes
// each in practice). Pass it to ReadFileBounded for server.lock and node
// metadata too.
const MaxStateFileBytes = 64 << 10

// ReadFileBounded reads the regular file at path, refusing anything else,
// and never reads more than max bytes.
//
// It opens the file with O_NONBLOCK (on Unix) so that a FIFO cannot block
// the open, then fstat's the opened file: a FIFO, device, socket or
// directory is refused with an error naming the path and what it is,
// before any read; so is a regular file larger than max (without reading
// it). A file that grows past max while it is read is refused too. Files
// whose size the kernel reports as 0 (/proc) are read up to max.
//
// Errors of the open keep their *fs.PathError, so errors.Is(err,
// fs.ErrNotExist) and fs.ErrPermission work as with os.ReadFile.
func ReadFileBounded(path string, max int64) ([]byte, error) {
	if max < 0 {
		max = 0
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		if what := describeUnopenable(path, err); what != "" {
			return nil, &fs.PathError{Op: "read", Path: path, Err: &notRegularError{what: what}}
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: &notRegularError{what: describeFileMode(fi.Mode())}}
	}
	if fi.Size() > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: &tooLargeError{size: fi.Size(), max: max}}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(data)) > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: &tooLargeError{size: -1, max: max}}
	}
	return data, nil
}

// ErrNotRegularFile is matched (errors.Is) by ReadFileBounded's refusal of
// a FIFO, device, socket or directory.
var ErrNotRegularFile = errors.New("not a regular file")

// ErrFileTooLarge is matched (errors.Is) by ReadFileBounded's refusal of a
// file over its limit.
var ErrFileTooLarge = errors.New("file too large")

type notRegularError struct{ what string }

func (e *notRegularError) Error() string {
	return "it is " + e.what + ", not a regular file"
}

func (e *notRegularError) Is(target error) bool { return target == ErrNotRegularFile }

type tooLargeError struct{ size, max int64 }

func (e *tooLargeError) Error() string {
	if e.size < 0 {
		return fmt.Sprintf("it is over the %d-byte limit for this file (it grew while being read)", e.max)
	}
	return fmt.Sprintf("it is %d bytes, over the %d-byte limit for this file", e.size, e.max)
}

func (e *tooLargeError) Is(target error) bool { return target == ErrFileTooLarge }

// describeFileMode names the type of a file that is not regular.
func describeFileMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	default:
		return fmt.Sprintf("a special file (mode %s)", m)
	}
}

// describeUnopenable names what path is when open failed because it is not
// a file that can be opened for reading (a Unix socket gives ENXIO), else
// "".
func describeUnopenable(path string, err error) string {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return ""
	}
	fi, serr := os.Stat(path)
	if serr != nil || fi.Mode().IsRegular() {
		return ""
	}
	return describeFileMode(fi.Mode())
}

// OpenRegular opens the regular file at path for reading, refusing
// anything else, without ever blocking on the open: like ReadFileBounded
// it opens with O_NONBLOCK (on Unix), so a FIFO with no writer answers at
// once instead of hanging its caller, then fstat's the opened file (not
// the path, which may have been swapped since a Stat) and refuses a FIFO,
// device, socket or directory with an error matching ErrNotRegularFile.
// Reads of a regular file are not affected by O_NONBLOCK. The caller
// closes the file; the FileInfo is the opened file's.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		if what := describeUnopenable(path, err); what != "" {
			return nil, nil, &fs.PathError{Op: "open", Path: path, Err: &notRegularError{what: what}}
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: &notRegularError{what: describeFileMode(fi.Mode())}}
	}
	return f, fi, nil
}
