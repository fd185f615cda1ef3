package testenv

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntilAndEventually(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	if !Until(10*time.Second, func() bool { return n.Add(1) == 5 }) {
		t.Fatalf("Until gave up on a condition that held at the fifth call")
	}
	if Until(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("Until reported a condition that never held")
	}
	calls := 0
	Until(0, func() bool { calls++; return false })
	if calls != 1 {
		t.Fatalf("Until with no time called the condition %d times, want once", calls)
	}
	out := RunHelper(t, func(tb testing.TB) {
		Eventually(tb, 20*time.Millisecond, func() bool { return false }, Msg("the door is %s", "shut"))
	})
	if !strings.Contains(out.Failed, "not within 20ms: the door is shut") {
		t.Fatalf("Eventually's failure: %+v", out)
	}
	if out := RunHelper(t, func(tb testing.TB) { Eventually(tb, time.Second, func() bool { return true }, Msg("x")) }); out != (Outcome{}) {
		t.Fatalf("Eventually on a true condition: %+v", out)
	}
}
