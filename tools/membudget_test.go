package tools

import (
	"errors"
	"testing"
)

// A memory budget takes what fits, refuses the rest at once (unavailable,
// retryable, reason memory, with the figures), grows and shrinks grants,
// and gets everything back on release.
func TestMemoryBudget(t *testing.T) {
	t.Parallel()
	b := NewMemoryBudget("searches", 100)
	a, err := b.Take(60, "search A")
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Take(50, "search B")
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindUnavailable || !e.Retryable || e.Details["reason"] != "memory" ||
		e.Details["budget"] != "searches" || e.Details["in_use_bytes"] != int64(60) || e.Details["asked_bytes"] != int64(50) ||
		!errors.Is(err, ErrMemoryBudget) {
		t.Fatalf("past the budget: %#v", err)
	}
	if err := a.Grow(50); err == nil || a.Bytes() != 60 {
		t.Fatalf("a grow past the budget: %v, holds %d", err, a.Bytes())
	}
	if err := a.Grow(40); err != nil || b.InUse() != 100 {
		t.Fatalf("a grow that fits: %v, in use %d", err, b.InUse())
	}
	a.Set(10)
	c, err := b.Take(90, "search C")
	if err != nil {
		t.Fatal(err)
	}
	if b.Grants() != 2 {
		t.Fatalf("%d grants", b.Grants())
	}
	a.Release()
	a.Release()
	c.Release()
	a.Set(50) // after release: nothing
	if b.InUse() != 0 || b.Grants() != 0 {
		t.Fatalf("after release: %d bytes in %d grants", b.InUse(), b.Grants())
	}
	_, err = b.Take(101, "a huge search")
	if !errors.As(err, &e) || e.Kind != KindUnavailable || e.Details["limit_bytes"] != int64(100) {
		t.Fatalf("larger than the budget: %v", err)
	}
	var nilGrant *MemoryGrant
	nilGrant.Release()
}
