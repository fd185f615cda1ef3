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

// kindText is ls's KIND: terminal_list's kind, else (an older
// termsprawl) the agent kind or shell.
func kindText(r tools.NodeInfo) string {
	switch {
	case r.Kind != "":
		return r.Kind
	case r.Agent != "":
		return r.Agent
	}
	return tools.KindShell
}

// stateText is ls's STATE: the agent's state for agents, else the process
// status; "exited (CODE)" once the program ended.
func stateText(r tools.NodeInfo) string {
	if r.Status == tools.StatusExited || r.State == "" {
		return statusText(r)
	}
	return r.State
}
