package testenv

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Until calls cond until it reports true (then Until reports true) or
// within has passed (then false, after one last call). Between calls it
// waits a little longer each time, from 1 ms up to 50 ms. It is the one
// way tests poll an outside condition (a tmux pane, a file, a process)
// that sends no event; a condition that has an event (a channel, a
// revision wait) is waited on directly instead.
func Until(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	pause := time.Millisecond
	t := time.NewTimer(pause)
	defer t.Stop()
	for {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		<-t.C
		pause = min(2*pause, 50*time.Millisecond)
		t.Reset(min(pause, max(time.Until(deadline), 0)))
	}
}

// Eventually is Until that fails t when within passes first, with the
// message msg returns then (so it can show the last state seen).
func Eventually(t testing.TB, within time.Duration, cond func() bool, msg func() string) {
	t.Helper()
	if !Until(within, cond) {
		t.Fatalf("not within %v: %s", within, msg())
	}
}

// Msg is a msg for Eventually that formats its arguments when called:
// pass pointers or closures for state that changes while waiting.
func Msg(format string, args ...any) func() string {
	return func() string { return fmt.Sprintf(format, args...) }
}

// SkipShort skips t under -short, saying why it is slow and how to run
// it: the end-to-end and load tests that -short leaves out call it first.
func SkipShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		name := t.Name()
		if i := strings.IndexByte(name, '/'); i >= 0 {
			name = name[:i]
		}
		t.Skipf("-short leaves this out (%s); run it with: go test -run '^%s$' in its package, without -short", why, name)
	}
}

// DefaultParallel raises go test's -parallel to n for a package whose
// tests mostly wait (on tmux, on processes they started) rather than
// compute, unless the command line set -parallel. Call it in TestMain
// after flag.Parse. (go test's default is GOMAXPROCS, which on a 2-core
// machine leaves the package's waiting tests two at a time.)
func DefaultParallel(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set && n > runtime.GOMAXPROCS(0) {
		flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// Main is the TestMain of a package whose tests mostly wait (on tmux, on
// the programs they start): its tests run parallel at a time unless the
// command line set -parallel (DefaultParallel).
func Main(m *testing.M, parallel int) { os.Exit(Run(m, parallel)) }

// Run is Main for a TestMain with its own set-up and clean-up around the
// tests: it returns m.Run's code instead of exiting.
func Run(m *testing.M, parallel int) int {
	flag.Parse()
	DefaultParallel(parallel)
	return m.Run()
}
