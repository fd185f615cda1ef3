package tools

// KindInfo is an error kind and what a caller should do about it.
type KindInfo struct {
	Kind    Kind   `json:"kind"`
	Meaning string `json:"meaning"`
}

// ErrorKinds lists every error kind of CONTRACT §3 in a stable order, for
// generated documentation (termsprawlctl agent-context).
func ErrorKinds() []KindInfo {
	return []KindInfo{
		{KindUsage, "bad operation or args: nothing was done; fix the call"},
		{KindNotFound, "no such node, task, dialog, watch or topic"},
		{KindUnauthorized, "missing or unknown token"},
		{KindForbidden, "authenticated but not allowed"},
		{KindConflict, "state conflict: a reused idempotency key, a history-truncated cursor, a stale-ref"},
		{KindTimeout, "a wait ran out of time (details carry a screen excerpt)"},
		{KindNotRun, "refused before anything was sent to the terminal (e.g. input-mode-disabled, the program exited)"},
		{KindInProgress, "sent, outcome unknown: look before you repeat"},
		{KindRejected, "understood but refused (a limit, capacity)"},
		{KindUnavailable, "termsprawl is not reachable: check that it is running; mutations are not retried"},
		{KindInternal, "a bug in termsprawl"},
	}
}

// ReasonInfo is a details.reason value some errors carry.
type ReasonInfo struct {
	Reason  string `json:"reason"`
	Kind    Kind   `json:"kind"`
	Meaning string `json:"meaning"`
}

// ErrorReasons lists the details.reason values callers branch on.
func ErrorReasons() []ReasonInfo {
	return []ReasonInfo{
		{"history-truncated", KindConflict, "the cursor or after revision is older than the kept history: take a terminal_snapshot and go on from its revision"},
		{"stale-ref", KindConflict, "a terminal_query ref whose text is no longer at its place: query again"},
		{"input-mode-disabled", KindNotRun, "the program has not enabled the mouse tracking the action needs: nothing was sent (see terminal_capabilities)"},
	}
}
