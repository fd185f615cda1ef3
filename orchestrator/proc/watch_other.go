//go:build !linux

package proc

// Watcher needs Linux's pidfds; elsewhere NewWatcher reports
// ErrUnsupported and the engine relies on tmux's pane-died hook and its
// quiet-time check.
type Watcher struct{}

// NewWatcher reports ErrUnsupported outside Linux.
func NewWatcher() (*Watcher, error) { return nil, ErrUnsupported }

// Watch reports ErrUnsupported outside Linux.
func (w *Watcher) Watch(pid int, onExit func()) error { return ErrUnsupported }

// Close does nothing outside Linux.
func (w *Watcher) Close() {}
