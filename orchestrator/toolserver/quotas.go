package toolserver

import "github.com/termsprawl/termsprawl/tools"

// Per-node quotas: one node cannot use up a table every node shares.
// Receipts have theirs in tools.MaxReceiptsPerCaller.
const (
	// maxWatchesPerNode bounds the live watches one node started; the
	// operator, one human for every node, has maxWatchesOperator.
	maxWatchesPerNode  = 32
	maxWatchesOperator = 256
	// maxWatches bounds all live watches together.
	maxWatches = 4096
	// maxDialogsPerNode bounds one node's pending dialogs.
	maxDialogsPerNode = 8
)

// maxTasksPerSender bounds the pending tasks one node sent (a variable so
// tests need not type 64 tasks to reach it).
var maxTasksPerSender = 64

// quotaErr is the rejected error naming the quota that a call ran into.
func quotaErr(quota string, limit int, format string, a ...any) error {
	return tools.Errorf(tools.KindRejected, "quota: "+format, a...).
		WithDetails("quota", quota).WithDetails("limit", limit)
}
