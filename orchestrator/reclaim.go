package orchestrator

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/launchenv"
	"github.com/termsprawl/termsprawl/tmuxctl"
)

// reclaimWait bounds how long a reclaimed shard's server takes to exit.
const reclaimWait = 5 * time.Second

// reclaimShards lets every shard but the first that holds no node and no
// launch under way exit: our clients leave it first (tmux 3.3a's crash
// traps: no control client of ours is attached when a pane dies), then
// its admin session's `sleep infinity` ends with remain-on-exit off, tmux
// destroys the last session and exit-empty ends the server. It runs under
// shardMu, so no launch picks the shard meanwhile and a new shard never
// reuses the socket of one that is still going away.
func (o *Orchestrator) reclaimShards(ctx context.Context) {
	o.shardMu.Lock()
	defer o.shardMu.Unlock()
	o.idMu.Lock()
	o.mu.Lock()
	if o.closing {
		o.mu.Unlock()
		o.idMu.Unlock()
		return
	}
	count := o.serverLoadLocked()
	var empty []*tmuxServer
	kept := o.shards[:1:1]
	for _, s := range o.shards[1:] {
		if count[s] == 0 {
			empty = append(empty, s)
		} else {
			kept = append(kept, s)
		}
	}
	o.shards = kept
	o.mu.Unlock()
	o.idMu.Unlock()
	for _, s := range empty {
		o.endShard(ctx, s)
	}
}

// endShard ends an empty shard's server (see reclaimShards).
func (o *Orchestrator) endShard(ctx context.Context, s *tmuxServer) {
	socket := s.Socket()
	pid := 0
	if admin := s.Admin(); admin != nil {
		if out, err := admin.Run(ctx, tmuxctl.Command("display-message", "-p", "-t", "="+hosts.AdminSession+":", "#{pane_pid}")); err == nil && len(out) == 1 {
			pid, _ = strconv.Atoi(strings.TrimSpace(out[0]))
		}
		admin.Run(ctx, tmuxctl.Command("set-option", "-p", "-t", "="+hosts.AdminSession+":", "remain-on-exit", "off"))
	}
	s.Close() // our clients leave first
	if pid <= 0 {
		o.log.Warn("empty tmux shard kept: its admin session's pid is unknown", "socket", socket)
		return
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		syscall.Kill(pid, sig)
		deadline := time.Now().Add(reclaimWait / 2)
		for time.Now().Before(deadline) {
			if !hosts.Running(ctx, o.cfg.Tmux, socket, launchenv.Tmux()) {
				o.log.Info("empty tmux shard ended", "socket", socket)
				if o.hooks.reclaimed != nil {
					o.hooks.reclaimed(socket)
				}
				return
			}
			if !hosts.Pause(ctx, 20*time.Millisecond) {
				return
			}
		}
	}
	o.log.Warn("empty tmux shard did not exit", "socket", socket)
}
