//go:build !unix

package tools

import "testing"

// raiseNoFile skips: descriptor limits are Unix.
func raiseNoFile(t *testing.T, want, need uint64) {
	t.Helper()
	t.Skip("RLIMIT_NOFILE is Unix-only")
}
