//go:build !linux

package orchestrator

import "errors"

// procWatcher needs Linux's pidfds; elsewhere the orchestrator relies on
// tmux's pane-died hook and the quiet-time check (New logs it).
type procWatcher struct{}

func newProcWatcher() (*procWatcher, error) {
	return nil, errors.New("process watching needs Linux pidfds")
}

func (w *procWatcher) watch(pid int, onExit func()) error {
	return errors.New("process watching needs Linux pidfds")
}

func (w *procWatcher) close() {}
