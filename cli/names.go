package cli

import (
	"errors"

	"github.com/termsprawl/termsprawl/tools"
)

// Naming nodes (CONTRACT §18): a NODE that names several nodes is a usage
// error (exit 2) listing them; an unknown one is exit 1 and suggests a
// near id or name (the engine's Resolve and resolveNode both do).

// ambiguousNodeError is resolveNode's error for a word naming several
// nodes.
type ambiguousNodeError struct{ msg string }

func (e *ambiguousNodeError) Error() string { return e.msg }

// nameErrorCode is the exit code of a resolveNode error: 2 for
// ambiguity, else 1.
func nameErrorCode(err error) int {
	var amb *ambiguousNodeError
	if errors.As(err, &amb) {
		return ExitUsage
	}
	return ExitNo
}

// ambiguous reports whether a failed result is the engine's "names N
// terminals" usage error (its details list the candidates).
func ambiguous(res tools.Result) bool {
	if res.OK || res.Kind != tools.KindUsage {
		return false
	}
	_, ok := res.Details["candidates"]
	return ok
}
