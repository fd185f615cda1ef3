package proc

import "errors"

// ErrUnsupported means this system cannot watch processes by pidfd: not
// Linux, or a kernel without pidfd_open.
var ErrUnsupported = errors.New("process watching needs Linux pidfds (pidfd_open, Linux 5.3+)")

// ErrClosed is Watch on a closed Watcher.
var ErrClosed = errors.New("process watcher closed")
