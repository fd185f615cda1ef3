package toolserver

import (
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/tables"
	"github.com/termsprawl/termsprawl/tools"
)

// Watches are waits that outlive one request; the table (ids, quotas,
// the waits' goroutines, the file) is orchestrator/tables' Watches.

// prepareWatch arms a watch's wait on the engine (the table's
// PrepareWait).
func (s *Server) prepareWatch(terminal string, spec tools.WaitSpec, lifetime time.Duration) (tables.Wait, uint64, error) {
	pw, err := s.eng.watches.PrepareWait(terminal, spec, lifetime)
	if err != nil {
		return nil, 0, err
	}
	return pw, pw.After, nil
}

func watchHandlers() map[string]handler {
	return map[string]handler{
		"watch_start":  reader(watchStart),
		"watch_wait":   reader(watchWait),
		"watch_cancel": reader(watchCancel),
	}
}

func watchStart(c *call, a waitArgs) (tools.WatchStarted, error) {
	spec := a.WaitSpec
	spec.TimeoutMS = 0
	pw, after, err := c.s.prepareWatch(a.Terminal, spec, tables.WatchLifetime)
	if err != nil {
		return tools.WatchStarted{}, err
	}
	return c.s.watches.Start(c.ctx, c.caller, a.Terminal, spec, pw, after)
}

type watchWaitArgs struct {
	Watch     string `json:"watch"`
	TimeoutMS int    `json:"timeout_ms"`
}

func watchWait(c *call, a watchWaitArgs) (tools.WatchFired, error) {
	timeout := tools.DefaultWaitTimeout
	if a.TimeoutMS > 0 {
		timeout = time.Duration(a.TimeoutMS) * time.Millisecond
	}
	return c.s.watches.Wait(c.ctx, c.caller, a.Watch, timeout)
}

type watchArg struct {
	Watch string `json:"watch"`
}

func watchCancel(c *call, a watchArg) (tools.WatchCancelled, error) {
	return c.s.watches.Cancel(c.caller, a.Watch)
}
