package orchestrator

import (
	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/memtrim"
	"github.com/termsprawl/termsprawl/orchestrator/proc"
)

// nodeEnv is the engine as its nodes see it (node.Env).
type nodeEnv struct{ o *Orchestrator }

func (e nodeEnv) Limits() node.Limits {
	c := e.o.cfg
	return node.Limits{IdleAfter: c.IdleAfter, RestAfter: c.RestAfter, LaunchWatch: c.LaunchWatch, Version: c.Version, StateDir: c.StateDir}
}

func (e nodeEnv) Meter() *memtrim.Meter { return &e.o.output }
func (e nodeEnv) Procs() *proc.Watcher  { return e.o.procs }

func (e nodeEnv) PaneDied() {
	select {
	case e.o.deaths <- struct{}{}:
	default:
	}
}

func (e nodeEnv) Stopping() <-chan struct{}    { return e.o.stop }
func (e nodeEnv) StatusChanged()               { e.o.statusChanged() }
func (e nodeEnv) KeepExit(id string, code int) { e.o.keepExit(id, code) }
func (e nodeEnv) ClientEnded(n *node.Node)     { e.o.clientEnded(n) }
func (e nodeEnv) MetaPath(id string) string    { return e.o.metaPath(id) }

func (e nodeEnv) Hooks() *node.Hooks {
	if e.o.hooks == nil {
		return &node.Hooks{}
	}
	return &e.o.hooks.Hooks
}
