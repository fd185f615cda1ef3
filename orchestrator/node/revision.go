package node

import (
	"errors"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tools"
)

// RevisionBase is the revision a node's mirror starts at in its epoch-th
// orchestrator life: epoch in the high 32 bits. 2^21 restarts stay below
// 2^53, the largest integer a JSON number carries exactly everywhere.
func RevisionBase(epoch uint64) uint64 { return epoch << 32 }

// RevisionErr turns the mirror's revision error into the contract's: a
// revision older than the kept history (or from an earlier life of the
// orchestrator: revisions never repeat) is conflict/history-truncated, one
// newer than any handed out a usage error.
func RevisionErr(id, arg string, rev uint64, err error) error {
	if errors.Is(err, screen.ErrHistoryTruncated) {
		e := tools.Errorf(tools.KindConflict, "history-truncated: revision %d of %q is older than the kept history; call terminal_snapshot and continue from its revision: %w", rev, id, err).
			WithDetails("reason", "history-truncated")
		// The oldest revision still answerable: a reader that wants
		// what is kept (the dashboard's logs tab) asks again from it.
		if re := (*screen.RevisionError)(nil); errors.As(err, &re) {
			e = e.WithDetails("oldest", re.Oldest)
		}
		return e
	}
	return tools.Errorf(tools.KindUsage, "%s %d of %q: %w; pass a revision this terminal returned", arg, rev, id, err)
}
