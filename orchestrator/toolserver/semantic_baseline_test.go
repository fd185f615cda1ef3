package toolserver

import (
	"sync"
	"testing"
	"time"
)

// A node's token is known from its birth, before its program starts, but
// the node joins the registry only after its mirror attached. A probe
// publishes as soon as the program has drawn; on a loaded machine that
// first publish can come in between. It must not be refused (the probe
// drops a refused tree, and a program that draws once and then idles
// would never have one): the call waits for the launch to settle. The
// hook holds the registration until the program's publish reached the
// tool server.
func TestSemanticFirstPublishBeforeTheNodeIsRegistered(t *testing.T) {
	t.Parallel()
	bin := semdemoBin(t)
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	arrived := make(chan struct{})
	var once sync.Once
	s.hooks.notLive = func(string) { once.Do(func() { close(arrived) }) }
	held := false
	s.hooks.beforeRegister = func(string) {
		select {
		case <-arrived:
			held = true
		case <-time.After(20 * time.Second):
		}
	}
	id := apiLaunch(t, op, bin)
	s.hooks.beforeRegister = nil
	if !held {
		t.Fatal("the probe's first publish never reached the tool server before the node was registered")
	}
	apiOK(t, op, "terminal_wait_for", apiM{"terminal": id, "wait": "semantic", "locator": apiM{"role": "dialog"}, "state": "visible", "after": 0, "timeout_ms": 15000}, nil)
}
