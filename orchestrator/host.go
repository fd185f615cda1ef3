package orchestrator

import (
	"context"
	"sort"
	"sync"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/proc"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// Hosts: tmux servers on other machines, reached over ssh (CONTRACT §17).
// The connection — ssh master, probe, the host's tmux server, reconnects —
// is orchestrator/hosts' (hosts.SSH); the engine keeps the host's nodes
// (remote.go) and is told of connections and losses through hooks.

// Host connection states (HostStatus.State).
const (
	HostConnecting  = hosts.StateConnecting
	HostConnected   = hosts.StateConnected
	HostUnreachable = hosts.StateUnreachable
)

// hostConnectTimeout bounds one connection attempt.
const hostConnectTimeout = hosts.ConnectTimeout

// HostError is why a host could not be used (hosts.Error).
type HostError = hosts.Error

// ErrHostUnreachable is wrapped by the errors of operations on the nodes
// of a host that cannot be reached now.
var ErrHostUnreachable = hosts.ErrUnreachable

// HostStatus is one host as doctor and tests see it.
type HostStatus = hosts.Status

// remoteHost is one machine as the engine sees it: its connection
// (hosts.SSH) and the orchestrator whose nodes live there.
type remoteHost struct {
	*hosts.SSH
	o *Orchestrator
}

// startHosts makes the host set and, for each host, connects, adopts its
// sessions and starts its supervisor. A host that cannot be reached does
// not stop the orchestrator: it is logged and retried in the background.
func (o *Orchestrator) startHosts(ctx context.Context) error {
	o.hosts = hosts.NewSet()
	seen, err := hosts.CheckSpecs(o.cfg.Hosts)
	if err != nil {
		return err
	}
	o.warnUnknownHosts(seen)
	var wg sync.WaitGroup
	for _, spec := range o.cfg.Hosts {
		h := &remoteHost{o: o}
		h.SSH = hosts.NewSSH(hosts.SSHConfig{Spec: spec, StateDir: o.cfg.StateDir, Deaths: o.deaths, Log: o.log,
			Endpoint:    o.hosts.Endpoint,
			SysProcAttr: proc.DieWithParent,
			OnConnected: func(ctx context.Context) { h.adoptSessions(ctx) },
			OnLost:      h.markUnreachable,
			AfterLost: func() {
				if o.hooks.hostLost != nil {
					o.hooks.hostLost(spec.Name)
				}
			},
			BeforeConnect: func() {
				if o.hooks.hostConnect != nil {
					o.hooks.hostConnect(spec.Name)
				}
			},
		})
		o.hosts.Add(spec.Name, h.SSH)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, hostConnectTimeout)
			defer cancel()
			if err := h.Connect(cctx); err != nil {
				o.log.Warn("host not reachable; retrying in the background", "host", spec.Name, "err", err)
				h.placeholders()
			} else {
				h.adoptSessions(cctx)
			}
			h.Start()
		}()
	}
	wg.Wait()
	return nil
}

// warnUnknownHosts says which nodes belong to a host that is no longer
// configured (hosts.json edited by hand): they are not listed, and the
// way to end or forget them is to name the host again and remove it.
func (o *Orchestrator) warnUnknownHosts(known map[string]string) {
	orphans := map[string][]string{}
	for id, read := range statefile.ReadMetas(o.cfg.StateDir) {
		if read.Err == nil && read.Host != "" {
			if _, ok := known[read.Host]; !ok {
				orphans[read.Host] = append(orphans[read.Host], id)
			}
		}
	}
	for host, ids := range orphans {
		sort.Strings(ids)
		o.log.Warn("nodes of a host that is not configured are not listed: name the host again (termsprawl up --host "+host+"=DEST), then `termsprawl hosts rm "+host+" --close-nodes` closes them, or forgets them if the host is gone for good",
			"host", host, "nodes", ids)
	}
}

// markUnreachable marks the host's nodes unreachable (the connection was
// lost; the remote tmux server and its programs keep running).
func (h *remoteHost) markUnreachable() {
	for _, n := range h.o.sortedNodes() {
		if _, _, gone := n.State(); n.Meta.Host == h.Spec().Name && !gone {
			n.SetStatus(tools.StatusUnreachable, nil)
		}
	}
}

// host returns the host of name, or nil.
func (o *Orchestrator) host(name string) *remoteHost {
	if h := o.hosts.Get(name); h != nil {
		return &remoteHost{SSH: h, o: o}
	}
	return nil
}

// Hosts reports every host's connection.
func (o *Orchestrator) Hosts() []HostStatus { return o.hosts.Statuses() }

// SetEndpoint tells the hosts where the tool server listens: each gets
// the reverse forward and its endpoint.json now and after every reconnect.
func (o *Orchestrator) SetEndpoint(ep tools.Endpoint) { o.hosts.SetEndpoint(ep) }
