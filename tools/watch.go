package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchDebounce is how long a burst of events must be quiet before the
// file is read; partial reads are retried with doubling delays up to
// watchMaxRetries times (until the next event).
const (
	watchDebounce   = 50 * time.Millisecond
	watchMaxRetries = 5
)

// WaitForEndpoint waits until endpointPath holds an endpoint that accept
// approves (nil accepts any parseable endpoint) and returns it.
//
// It watches the directory, not the file (an atomic rename replaces the
// file); if the directory does not exist yet it watches its nearest
// existing ancestor and moves down as directories appear. The file is
// checked once right after the watch is armed, so a file written before
// the call is never missed; after that only fsnotify events (debounced by
// ~50 ms) trigger reads: there is no polling loop. A read that sees a
// partial or invalid file is retried a few times with growing delays.
// It returns when ctx ends, with an error wrapping ctx.Err().
func WaitForEndpoint(ctx context.Context, endpointPath string, accept func(Endpoint) bool) (Endpoint, error) {
	if accept == nil {
		accept = func(Endpoint) bool { return true }
	}
	path, err := filepath.Abs(endpointPath)
	if err != nil {
		return Endpoint{}, fmt.Errorf("wait for endpoint: %w", err)
	}
	dir := filepath.Dir(path)

	w, err := fsnotify.NewWatcher()
	if err != nil {
		return Endpoint{}, fmt.Errorf("wait for endpoint: create watcher: %w", err)
	}
	defer w.Close()

	watched := "" // the directory currently watched
	arm := func() error {
		target, err := nearestExistingDir(dir)
		if err != nil {
			return err
		}
		if target == watched {
			return nil
		}
		if err := w.Add(target); err != nil {
			return fmt.Errorf("watch %s: %w", target, err)
		}
		if watched != "" {
			_ = w.Remove(watched) // may already be gone with its directory
		}
		watched = target
		return nil
	}
	if err := arm(); err != nil {
		return Endpoint{}, fmt.Errorf("wait for endpoint %s: %w", path, err)
	}

	// try reads the file; partial reports a read that failed for another
	// reason than absence (a half-written file, a bad JSON).
	try := func() (ep Endpoint, ok, partial bool) {
		ep, err := ReadEndpoint(path)
		if err != nil {
			return Endpoint{}, false, !errors.Is(err, os.ErrNotExist)
		}
		return ep, accept(ep), false
	}

	retries := 0
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	// First check, after the watch is armed: nothing can slip between.
	if ep, ok, partial := try(); ok {
		return ep, nil
	} else if partial {
		retries = 1
		timer.Reset(watchDebounce)
	}

	for {
		select {
		case <-ctx.Done():
			return Endpoint{}, fmt.Errorf("wait for endpoint %s: %w", path, ctx.Err())
		case ev, open := <-w.Events:
			if !open {
				return Endpoint{}, fmt.Errorf("wait for endpoint %s: watcher closed", path)
			}
			relevant := filepath.Clean(ev.Name) == path
			if filepath.Clean(ev.Name) == watched && ev.Op&(fsnotify.Remove|fsnotify.Rename) != 0 {
				watched = "" // its watch died with it
			}
			if watched != dir {
				if err := arm(); err != nil {
					return Endpoint{}, fmt.Errorf("wait for endpoint %s: %w", path, err)
				}
				// The file may have been created before the new watch.
				relevant = true
			}
			if relevant {
				retries = 0
				timer.Reset(watchDebounce)
			}
		case werr, open := <-w.Errors:
			if !open {
				return Endpoint{}, fmt.Errorf("wait for endpoint %s: watcher closed", path)
			}
			if errors.Is(werr, fsnotify.ErrEventOverflow) {
				timer.Reset(watchDebounce) // events were lost: look again
			}
		case <-timer.C:
			ep, ok, partial := try()
			if ok {
				return ep, nil
			}
			if partial && retries < watchMaxRetries {
				timer.Reset(watchDebounce << retries)
				retries++
			}
		}
	}
}

// nearestExistingDir returns dir, or its nearest ancestor that exists.
func nearestExistingDir(dir string) (string, error) {
	d := dir
	for {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				return "", fmt.Errorf("%s is not a directory", d)
			}
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no existing ancestor of %s: %w", dir, err)
		}
		d = parent
	}
}

// WatchFiles calls onChange(path) whenever one of paths is created,
// written, renamed or removed, until ctx ends. Like WaitForEndpoint it
// watches the files' directories (an atomic rename replaces a file and
// kills a watch on it) and debounces bursts by ~50 ms per path. The
// directories must exist. It returns ctx's error when ctx ends.
func WatchFiles(ctx context.Context, paths []string, onChange func(path string)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch files: create watcher: %w", err)
	}
	defer w.Close()
	wanted := map[string]bool{}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return fmt.Errorf("watch %s: %w", p, err)
		}
		wanted[abs] = true
		if err := w.Add(filepath.Dir(abs)); err != nil {
			return fmt.Errorf("watch %s: %w", filepath.Dir(abs), err)
		}
	}
	pending := map[string]bool{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, open := <-w.Events:
			if !open {
				return errors.New("watch files: watcher closed")
			}
			if p := filepath.Clean(ev.Name); wanted[p] {
				pending[p] = true
				timer.Reset(watchDebounce)
			}
		case _, open := <-w.Errors:
			if !open {
				return errors.New("watch files: watcher closed")
			}
		case <-timer.C:
			for p := range pending {
				onChange(p)
			}
			clear(pending)
		}
	}
}
