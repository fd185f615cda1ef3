package orchestrator

import (
	"context"
	"testing"
	"time"
)

// A node's session file — its token — is written before its program
// starts (OnBorn), but the node joins the registry only after its mirror
// attached. A call the program makes in between (a probe's first
// semantic_publish, an agent's first termsprawlctl call) would find no
// live node and be refused as an unknown token. AwaitLaunch lets the
// tool server hold such a call until the launch settles.

// markLaunching notes that id was born and is not registered yet. Call
// with o.mu held.
func (o *Orchestrator) markLaunching(id string) {
	if o.launching == nil {
		o.launching = map[string]chan struct{}{}
	}
	if _, ok := o.launching[id]; !ok {
		o.launching[id] = make(chan struct{})
	}
}

// settleLaunch ends id's launch (registered or rolled back). Call with
// o.mu held; a second call does nothing.
func (o *Orchestrator) settleLaunch(id string) {
	if ch, ok := o.launching[id]; ok {
		close(ch)
		delete(o.launching, id)
	}
}

// AwaitLaunch waits, at most timeout or until ctx ends, while node id is
// being launched (its session file written, the node not yet
// registered); it returns at once for any other id. It reports whether
// the launch settled (or none was under way).
func (o *Orchestrator) AwaitLaunch(ctx context.Context, id string, timeout time.Duration) bool {
	o.mu.Lock()
	ch, ok := o.launching[id]
	o.mu.Unlock()
	if !ok {
		return true
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// SetBeforeRegisterHook sets f to run in every launch of o after the
// node's program started and its mirror attached, just before the node is
// registered (nil: none). For the tests of the packages above the
// orchestrator (the tool server's), which widen that window with it; it
// panics outside a test binary. A function, not a method: the linker keeps
// every exported method of a type a program reflects on, but drops a
// function nothing outside the tests calls, so no binary carries it.
func SetBeforeRegisterHook(o *Orchestrator, f func(id string)) {
	if !testing.Testing() {
		panic("orchestrator: SetBeforeRegisterHook is a test seam, called outside a test")
	}
	o.hooks.beforeRegister = f
}
