package hostnodes

import (
	"context"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/node"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// adoptSessions runs after every (re)connect: nodes whose sessions still
// run on the host are mirrored again (a new mirror life, reseeded), nodes
// known from metadata are adopted, and nodes whose sessions ended are
// gone.
func (h *host) adoptSessions(ctx context.Context) {
	r := h.r
	srv := h.Server()
	if srv == nil {
		return
	}
	live, err := r.e.LiveSessions(ctx, srv)
	if err != nil {
		r.log.Warn("host: list sessions", "host", h.Spec().Name, "err", err)
		return
	}
	p, _ := h.Probe()
	serverWasUp := p.ServerUp
	var again []*node.Node
	life := srv.Life()
	life.Lock()
	metas := statefile.ReadMetas(r.cfg.StateDir)
	for _, n := range r.e.Nodes() {
		if n.Meta.Host != h.Spec().Name || n.IsClosing() {
			continue
		}
		delete(metas, n.Meta.ID)
		if _, _, gone := n.State(); gone {
			continue // already lost, listed until closed
		}
		if n.Client == nil && live[n.Meta.ID] {
			// Listed from its metadata while the host was not reached:
			// adopted now like any session known from metadata.
			if meta, err := statefile.ReadMeta(r.cfg.StateDir, n.Meta.ID); err == nil {
				r.e.Unregister(n.Meta.ID)
				n.MarkGone()
				h.adoptOne(ctx, meta, srv)
				continue
			}
		}
		if live[n.Meta.ID] {
			if n.Srv != srv {
				again = append(again, n) // not yet mirrored on this connection
			}
			continue
		}
		if !serverWasUp {
			// The remote tmux server itself ended (the machine restarted,
			// or tmux died): as for a local server's death, the node stays
			// listed as exited with the reason.
			n.MarkLost("the tmux server on host " + h.Spec().Name + " ended (the machine restarted or tmux died): the program is gone; terminal_close removes the node")
			r.log.Warn("remote tmux server ended: node lost", "node", n.Meta.ID, "host", h.Spec().Name)
			continue
		}
		r.log.Info("remote session ended while the host was unreachable", "node", n.Meta.ID, "host", h.Spec().Name)
		n.MarkGone()
		r.e.Forget(n.Meta.ID)
	}
	for id, read := range metas {
		if read.Host != h.Spec().Name {
			continue
		}
		if !live[id] {
			r.log.Info("remote session gone: forgetting the node", "node", id, "host", h.Spec().Name)
			r.e.RemoveFiles(id)
			continue
		}
		h.adoptOne(ctx, read.NodeMeta, srv)
		delete(live, id)
	}
	life.Unlock()
	for _, n := range again {
		r.e.Reattach(n)
		if nn := r.e.Node(n.Meta.ID); nn != nil && nn != n {
			if err := h.WriteSession(ctx, r.cfg.StateDir, n.Meta.ID); err != nil {
				r.log.Debug("rewrite remote session file", "node", n.Meta.ID, "err", err)
			}
		}
	}
	r.finishPendingCloses(h.Spec().Name, srv)
	if r.cfg.Adopted != nil {
		r.cfg.Adopted(h.Spec().Name)
	}
}

// adoptOne mirrors a session of the host known from its metadata (after
// an orchestrator restart). Call with the host's lifecycle lock held.
func (h *host) adoptOne(ctx context.Context, meta statefile.NodeMeta, srv *hosts.Tmux) {
	r := h.r
	if r.e.Node(meta.ID) != nil {
		return
	}
	meta.Epoch++
	meta.Socket = srv.Socket()
	if err := tools.WriteJSONAtomic(statefile.Path(r.cfg.StateDir, meta.ID, statefile.Meta), meta); err != nil {
		r.log.Warn("adopt remote node: write metadata", "node", meta.ID, "err", err)
		return
	}
	if _, err := tools.ReadSession(tools.SessionPath(r.cfg.StateDir, meta.ID)); err != nil {
		if err := r.e.WriteSessionFile(meta); err != nil {
			r.log.Warn("adopt remote node: session file", "node", meta.ID, "err", err)
			return
		}
	}
	if err := h.WriteSession(ctx, r.cfg.StateDir, meta.ID); err != nil {
		r.log.Warn("adopt remote node: remote session file", "node", meta.ID, "err", err)
	}
	srv.Admin().Run(ctx, tmuxctl.Command("set-option", "-p", "-t", "=ts-"+meta.ID+":", "remain-on-exit", "on"))
	n := r.e.NewNode(meta)
	if err := n.Attach(ctx); err != nil {
		r.log.Warn("cannot adopt remote node", "node", meta.ID, "host", h.Spec().Name, "err", err)
		return
	}
	r.e.Register(n)
	r.log.Info("adopted node", "node", meta.ID, "host", h.Spec().Name)
}
