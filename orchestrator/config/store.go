package config

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Store holds the settings in force and reloads them when config.toml
// changes. A reload that fails leaves the settings in force and is
// reported (LastError, and the Watch callback); the next good one
// replaces them.
type Store struct {
	dir    string
	checks []Check
	cur    atomic.Pointer[Config]

	// mu guards subs, nextID and lastErr, and serialises Reload, so
	// subscribers see changes in order.
	mu      sync.Mutex
	subs    map[int]func(old, cur *Config)
	nextID  int
	lastErr error
}

// Open loads the state directory's config.toml (the defaults when there
// is none) with the rooms' checks; a refused file is an error, which is
// how `up` refuses to start on one.
func Open(stateDir string, checks ...Check) (*Store, error) {
	c, err := Load(stateDir, checks...)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: stateDir, checks: checks, subs: map[int]func(old, cur *Config){}}
	s.cur.Store(c)
	return s, nil
}

// NewStatic is a Store over fixed settings (tests, and callers that run
// without a state directory's file).
func NewStatic(c *Config) *Store {
	s := &Store{subs: map[int]func(old, cur *Config){}}
	s.cur.Store(c)
	return s
}

// Current is the settings in force. Never nil; read-only.
func (s *Store) Current() *Config { return s.cur.Load() }

// OnChange calls f after each reload that changed the settings, with the
// old and the new ones, on the reloading goroutine (keep it short). The
// returned function removes f.
func (s *Store) OnChange(f func(old, cur *Config)) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID
	s.nextID++
	s.subs[id] = f
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.subs, id)
	}
}

// LastError is the error of the last reload, nil when it was good.
func (s *Store) LastError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Reload reads the file again. On error the settings in force stay.
func (s *Store) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		return nil
	}
	c, err := Load(s.dir, s.checks...)
	s.lastErr = err
	if err != nil {
		return err
	}
	old := s.cur.Swap(c)
	for _, f := range s.subs {
		f(old, c)
	}
	return nil
}

// Watch reloads on every change of config.toml until ctx ends; onErr (may
// be nil) hears of each refused reload. Changes within 100 ms are taken
// as one (editors write a file in several steps). It watches the
// directory, so a file made, replaced by rename or removed is seen; a
// removed file reloads the defaults.
func (s *Store) Watch(ctx context.Context, onErr func(error)) error {
	if s.dir == "" {
		return errors.New("config: a static store has no file to watch")
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	if err := w.Add(s.dir); err != nil {
		w.Close()
		return err
	}
	go func() {
		defer w.Close()
		var settle <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Base(ev.Name) == FileName {
					settle = time.After(100 * time.Millisecond)
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				if onErr != nil {
					onErr(err)
				}
			case <-settle:
				settle = nil
				if err := s.Reload(); err != nil && onErr != nil {
					onErr(err)
				}
			}
		}
	}()
	return nil
}
