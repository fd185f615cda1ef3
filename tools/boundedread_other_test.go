//go:build !unix

package tools

import "testing"

// mkfifo skips: no FIFOs here.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	t.Skip("no FIFOs on this system")
}
