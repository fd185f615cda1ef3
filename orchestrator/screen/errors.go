package screen

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match them with errors.Is; the concrete errors carry
// details ([*PanicError], [*RevisionError]).
var (
	// ErrNeedReseed reports that the emulator failed (it panicked on some
	// input). The Screen keeps serving its last good rows, keeps logging
	// output text, and ignores further output for the screen model until the
	// caller reseeds it from tmux with [Screen.Seed].
	ErrNeedReseed = errors.New("screen: emulator failed; reseed from tmux")

	// ErrHistoryTruncated reports a revision older than the kept history
	// (per-revision row changes or the text log).
	ErrHistoryTruncated = errors.New("screen: revision is older than the kept history")

	// ErrFutureRevision reports a revision newer than the current one: a
	// usage error (the revision was not obtained from this Screen).
	ErrFutureRevision = errors.New("screen: revision is newer than the current revision")

	// ErrClosed reports a call on a closed Screen that needs the emulator.
	ErrClosed = errors.New("screen: closed")

	// ErrInvalidSeed reports a SeedState that cannot describe a pane.
	ErrInvalidSeed = errors.New("screen: invalid seed state")
)

// PanicError is returned (as an ErrNeedReseed) when the emulator panicked.
type PanicError struct {
	Op    string // "write", "seed" or "resize"
	Value any    // the value passed to panic
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("screen: emulator panicked during %s: %v; reseed from tmux", e.Op, e.Value)
}

// Unwrap makes errors.Is(err, ErrNeedReseed) true.
func (e *PanicError) Unwrap() error { return ErrNeedReseed }

// RevisionError is returned for a revision outside the kept history. It wraps
// ErrHistoryTruncated or ErrFutureRevision.
type RevisionError struct {
	Requested uint64 // the revision asked for
	Oldest    uint64 // the oldest revision still answerable
	Current   uint64 // the current revision
	Err       error  // ErrHistoryTruncated or ErrFutureRevision
}

func (e *RevisionError) Error() string {
	return fmt.Sprintf("%v (requested %d, oldest kept %d, current %d)", e.Err, e.Requested, e.Oldest, e.Current)
}

// Unwrap returns the sentinel.
func (e *RevisionError) Unwrap() error { return e.Err }
