//go:build termsprawl_testhooks

package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
)

// Test pauses a `termsprawl up` built with -tags termsprawl_testhooks
// (only by the kill -9 loop in cli, e2e_interrupt_loop_test.go) reads from
// its environment: a submit whose text contains
// TERMSPRAWL_TEST_PAUSE_SUBMIT, and a close of a node whose name contains
// TERMSPRAWL_TEST_PAUSE_CLOSE, stop between two of their steps (after the
// text, before Enter; after detaching, before the hang-up), create
// STATE/test-paused-submit or STATE/test-paused-close, and wait there for
// a minute. A build without the tag has none of this (testpause_off.go).
var (
	testPauseSubmit = os.Getenv("TERMSPRAWL_TEST_PAUSE_SUBMIT")
	testPauseClose  = os.Getenv("TERMSPRAWL_TEST_PAUSE_CLOSE")
)

func (o *Orchestrator) testPause(ctx context.Context, what string) {
	os.WriteFile(filepath.Join(o.cfg.StateDir, "test-paused-"+what), nil, 0o600)
	hosts.Pause(ctx, time.Minute)
}

func testPauseMatches(pattern, s string) bool {
	return pattern != "" && strings.Contains(s, pattern)
}
