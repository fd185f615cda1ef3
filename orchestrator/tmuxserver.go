package orchestrator

import (
	"github.com/termsprawl/termsprawl/orchestrator/hosts"
)

// The tmux servers nodes live on are orchestrator/hosts' (local shards and
// the servers of ssh hosts behind hosts.Server); this is the engine's glue.

// tmuxServer is a concrete server: a local shard, or a host's connection.
type tmuxServer = hosts.Tmux

// TmuxServerConf is the servers' configuration (hosts.Conf; exported here
// for the tmux measurements in internal/blastradius).
const TmuxServerConf = hosts.Conf

// adminSession is the hidden session of every server (not a node).
const adminSession = hosts.AdminSession
