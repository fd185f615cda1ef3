package ctllite

import "strings"

// readOnlyOps names the read-only operations of the table (tools'
// Annotations.ReadOnly), space-separated with a space at each end:
// whether a failure after sending may be retried (the result's
// retryable). Generated from the table: `go test ./internal/ctllite -run
// TestReadOnlyTable -update` rewrites it, and the test fails when it is
// stale.
const readOnlyOps = " agent_status agent_task audit_list dialog_list fleet_search guide_read host_list policy_test session_info terminal_capabilities terminal_capture_since terminal_list terminal_query terminal_read terminal_scrollback terminal_snapshot terminal_wait_for trace_diff trace_frame_at trace_open trace_overview usage_report watch_wait worktree_diff worktree_list "

// ReadOnly reports whether op is a read-only operation.
func ReadOnly(op string) bool {
	return op != "" && !strings.Contains(op, " ") && strings.Contains(readOnlyOps, " "+op+" ")
}
