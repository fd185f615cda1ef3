package hostnodes

import (
	"context"
	"sort"
	"sync"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/node"
	"github.com/termsprawl/termsprawl/orchestrator/proc"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// Start fills the host table from specs and, for each host, connects,
// adopts its sessions and starts its supervisor. A host that cannot be
// reached does not stop the engine: it is logged, its nodes are listed
// as unreachable, and it is retried in the background.
func (r *Hosts) Start(ctx context.Context, specs []tools.HostSpec) error {
	seen, err := hosts.CheckSpecs(specs)
	if err != nil {
		return err
	}
	r.warnUnknownHosts(seen)
	var wg sync.WaitGroup
	for _, spec := range specs {
		h := &host{r: r}
		h.SSH = hosts.NewSSH(hosts.SSHConfig{Spec: spec, StateDir: r.cfg.StateDir, Deaths: r.cfg.Deaths, Log: r.log,
			Endpoint:    r.set.Endpoint,
			SysProcAttr: proc.DieWithParent,
			OnConnected: func(ctx context.Context) { h.adoptSessions(ctx) },
			OnLost:      h.markUnreachable,
			AfterLost: func() {
				if r.cfg.Lost != nil {
					r.cfg.Lost(spec.Name)
				}
			},
			BeforeConnect: func() {
				if r.cfg.Connect != nil {
					r.cfg.Connect(spec.Name)
				}
			},
		})
		r.set.Add(spec.Name, h.SSH)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, hosts.ConnectTimeout)
			defer cancel()
			if err := h.Connect(cctx); err != nil {
				r.log.Warn("host not reachable; retrying in the background", "host", spec.Name, "err", err)
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
func (r *Hosts) warnUnknownHosts(known map[string]string) {
	orphans := map[string][]string{}
	for id, read := range statefile.ReadMetas(r.cfg.StateDir) {
		if read.Err == nil && read.Host != "" {
			if _, ok := known[read.Host]; !ok {
				orphans[read.Host] = append(orphans[read.Host], id)
			}
		}
	}
	for host, ids := range orphans {
		sort.Strings(ids)
		r.log.Warn("nodes of a host that is not configured are not listed: name the host again (termsprawl up --host "+host+"=DEST), then `termsprawl hosts rm "+host+" --close-nodes` closes them, or forgets them if the host is gone for good",
			"host", host, "nodes", ids)
	}
}

// markUnreachable marks the host's nodes unreachable (the connection was
// lost; the remote tmux server and its programs keep running).
func (h *host) markUnreachable() {
	for _, n := range h.r.e.Nodes() {
		if _, _, gone := n.State(); n.Meta.Host == h.Spec().Name && !gone {
			n.SetStatus(tools.StatusUnreachable, nil)
		}
	}
}

// placeholders lists the nodes of a host that could not be reached at
// start-up, from their metadata, as unreachable (a blank mirror, no
// client) until the host answers and adoptSessions adopts them.
func (h *host) placeholders() {
	r := h.r
	for id, read := range statefile.ReadMetas(r.cfg.StateDir) {
		if read.Host != h.Spec().Name || read.Err != nil || r.e.Node(id) != nil {
			continue
		}
		r.e.ListUnreachable(read.NodeMeta, node.RevisionBase(read.Epoch+1), "")
		r.log.Info("node listed as unreachable until its host answers", "node", id, "host", h.Spec().Name)
	}
}

// connected returns the connected host of a launch (or of an agent's files),
// or the error to answer: an unknown host, or one that cannot be reached
// now (tried at once, so the caller hears why not).
func (r *Hosts) connected(ctx context.Context, name string) (*hosts.SSH, error) {
	h := r.host(name)
	if h == nil {
		return nil, r.set.Unknown(name, ": add it with `termsprawl up --host "+name+"=[user@]machine`")
	}
	if srv := h.Server(); srv != nil {
		return h.SSH, nil
	}
	cctx, cancel := context.WithTimeout(ctx, hosts.ConnectTimeout)
	defer cancel()
	if err := h.ConnectNow(cctx); err != nil {
		return nil, err
	}
	h.adoptSessions(cctx)
	if srv := h.Server(); srv != nil {
		return h.SSH, nil
	}
	return nil, tools.Errorf(tools.KindUnavailable, "host %s is unreachable: retry when it is back", name).WithDetails("host", name)
}
