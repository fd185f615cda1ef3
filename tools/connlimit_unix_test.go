//go:build unix

package tools

import (
	"syscall"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// raiseNoFile raises RLIMIT_NOFILE to want descriptors if it can, and
// skips the test when fewer than need are allowed.
func raiseNoFile(t *testing.T, want, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		testenv.SkipOrFail(t, "cannot read RLIMIT_NOFILE: %v", err)
	}
	if lim.Cur >= want {
		return
	}
	old := lim
	lim.Cur = want
	if lim.Max < want {
		lim.Max = want
	}
	err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	if err != nil { // not privileged: go as far as the hard limit
		lim = old
		lim.Cur = old.Max
		err = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
	if err != nil || lim.Cur < need {
		testenv.SkipOrFail(t, "this test needs RLIMIT_NOFILE >= %d; it is %d (hard %d) and raising it was refused (%v)", need, old.Cur, old.Max, err)
	}
}
