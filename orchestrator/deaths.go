package orchestrator

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/tools"
)

// watchDeaths reacts to the pane-died hook: it reads every pane's dead
// flag in one command and updates the nodes.
func (o *Orchestrator) watchDeaths() {
	defer o.wg.Done()
	retry := 0
	for {
		select {
		case <-o.stop:
			return
		case <-o.deaths:
		}
		// Every shard's and host's panes: the hook does not say which
		// server fired. Asked in parallel, each with its own timeout, so a
		// slow host does not delay the others (CONTRACT §23).
		// Each server's answer is handled as soon as it arrives.
		var notReadyAny atomic.Bool
		o.listPanesAll(func(out []string) {
			if o.paneDeaths(out) {
				notReadyAny.Store(true)
			}
		})
		notReady := notReadyAny.Load()
		if notReady && retry < 8 {
			// The status follows the pty's end shortly: look again.
			retry++
			time.AfterFunc(time.Duration(10<<retry)*time.Millisecond, func() {
				select {
				case o.deaths <- struct{}{}:
				default:
				}
			})
		} else if !notReady {
			retry = 0
		}
	}
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

// listPanesAll lists the panes of every shard and host at once, each
// server with its own timeout, and gives each server's lines to handle as
// they arrive (concurrently); a server that fails is logged and left out.
// It returns when every shard of this machine answered or timed out; a
// host's answer is not waited for (CONTRACT §23: a slow host never delays
// exit detection here): it is handled by hostPaneDeaths when it comes,
// with at most one list in flight per host.
func (o *Orchestrator) listPanesAll(handle func([]string)) {
	for _, srv := range o.hosts.Servers() {
		o.hostPaneDeaths(srv)
	}
	var wg sync.WaitGroup
	for _, srv := range o.shards.List() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if lines, ok := o.listPanes(srv); ok {
				handle(lines)
			}
		}()
	}
	wg.Wait()
}

// listPanes is one server's panes with their dead flags.
func (o *Orchestrator) listPanes(srv *tmuxServer) ([]string, bool) {
	if o.hooks.listPanes != nil {
		o.hooks.listPanes(srv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lines, err := hosts.ListPanes(ctx, srv)
	if err != nil {
		o.log.Warn("list panes after a pane died", "socket", srv.Socket(), "err", err)
		return nil, false
	}
	return lines, true
}

// hostPaneDeaths lists a host's panes in the background and updates its
// nodes; a list already in flight for the host is not doubled (the death
// that asked is in the lines it will read, or asks again: again is set).
// A dead pane whose status is not known yet is looked at again shortly.
func (o *Orchestrator) hostPaneDeaths(srv *tmuxServer) {
	if !o.hosts.BeginListing(srv) {
		return
	}
	if !o.beginOp() {
		o.hosts.DropListing(srv)
		return
	}
	go func() { // one host's pane list (owner: the death watcher; counted in ops)
		defer o.ops.Done()
		for {
			if lines, ok := o.listPanes(srv); ok && o.paneDeaths(lines) {
				time.AfterFunc(100*time.Millisecond, func() {
					select {
					case o.deaths <- struct{}{}:
					default:
					}
				})
			}
			if !o.hosts.EndListing(srv) {
				return
			}
		}
	}()
}
