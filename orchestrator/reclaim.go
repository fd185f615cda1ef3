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

// endShard ends an empty shard's server (see reclaimShards): the
// programs of its hidden sessions (admin, and the mirror session of a
// shared server) are ended once our clients have left.
func (o *Orchestrator) endShard(ctx context.Context, s *tmuxServer) {
	socket := s.Socket()
	var pids []int
	if admin := s.Admin(); admin != nil {
		if out, err := admin.Run(ctx, tmuxctl.Command("list-panes", "-a", "-F", "#{session_name} #{window_name} #{pane_pid} #{pane_id}")); err == nil {
			for _, line := range out {
				f := strings.Fields(line)
				if len(f) != 4 {
					continue
				}
				name := f[0]
				// The mirror session's own window, never a node's linked
				// into it.
				if name != hosts.AdminSession && (name != hosts.MirrorSession || f[1] != hosts.MirrorSession) {
					continue
				}
				if pid, _ := strconv.Atoi(f[2]); pid > 0 {
					pids = append(pids, pid)
				}
				admin.Run(ctx, tmuxctl.Command("set-option", "-p", "-t", f[3], "remain-on-exit", "off"))
			}
		}
	}
	s.Close() // our clients leave first
	o.clientsCache.forget(s)
	if len(pids) == 0 {
		o.log.Warn("empty tmux shard kept: its admin session's pid is unknown", "socket", socket)
		return
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		for _, pid := range pids {
			syscall.Kill(pid, sig)
		}
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
