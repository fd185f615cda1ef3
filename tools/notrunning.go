package tools

import (
	"errors"
	"fmt"
)

// ErrNotRunning is the cause of a Call result whose transport failed
// because no orchestrator answers: endpoint.json is missing, unreadable,
// unparsable or names an invalid endpoint, or the connection to the
// endpoint was refused (its listener is gone). Test it on the result's
// error:
//
//	if errors.Is(res.Err(), tools.ErrNotRunning) { /* exit 3 */ }
//
// Other transport failures (a timeout, a reply that is not a tool result,
// a redirect, an unreadable session file) do not match it, and neither
// does any result that came over the wire. The cause is not part of the
// JSON envelope.
var ErrNotRunning = errors.New("termsprawl is not running")

// notRunning marks res (an unavailable result) as "no orchestrator
// answers"; cause, if not nil, stays reachable with errors.Is/As.
func notRunning(res Result, cause error) Result {
	if cause == nil {
		res.cause = ErrNotRunning
	} else {
		res.cause = fmt.Errorf("%w: %w", ErrNotRunning, cause)
	}
	return res
}
