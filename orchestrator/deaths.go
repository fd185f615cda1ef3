package orchestrator

import (
	"strconv"
	"strings"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/tools"
)

// watchDeaths reacts to the pane-died hook (hosts.DeathWatch): it reads
// every pane's dead flag in one command per server and updates the nodes.
func (o *Orchestrator) watchDeaths() {
	defer o.wg.Done()
	w := &hosts.DeathWatch{Deaths: o.deaths, Stop: o.stop, Shards: o.shards, Hosts: o.hosts.Set(), Handle: o.paneDeaths,
		BeginOp: o.beginOp, EndOp: o.ops.Done, Log: o.log,
		BeforeList: func(srv *tmuxServer) {
			if h := o.hooks.listPanes; h != nil {
				h(srv)
			}
		}}
	w.Run()
}

// paneDeaths updates the nodes from list-panes lines; it reports whether
// a dead pane's status is not known yet.
func (o *Orchestrator) paneDeaths(out []string) bool {
	notReady := false
	for _, line := range out {
		o.log.Debug("pane state after a death", "line", line)
		f := strings.Fields(line)
		if len(f) != 3 || !strings.HasPrefix(f[0], "ts-") || !strings.HasPrefix(f[1], "1:") {
			continue
		}
		n := o.node(strings.TrimPrefix(f[0], "ts-"))
		if n == nil {
			continue
		}
		pid, _ := strconv.Atoi(f[2])
		if exited, code := hosts.CheckDead(f[1], pid, n.ZombieStatus); exited {
			if status, _, _ := n.State(); status != tools.StatusExited {
				n.RequestExit(code)
			}
			continue
		}
		notReady = true
	}
	return notReady
}
