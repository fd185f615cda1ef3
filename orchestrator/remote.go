package orchestrator

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/launchenv"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Nodes on hosts: launch, adoption after a (re)connect, their files on the
// remote side, signals and attach. The connection itself is host.go's.

// hostFor returns the connected host of a launch, or the error to answer.
func (o *Orchestrator) hostFor(ctx context.Context, name string) (*remoteHost, *tmuxServer, error) {
	h := o.host(name)
	if h == nil {
		return nil, nil, o.hosts.Unknown(name, ": add it with `termsprawl up --host "+name+"=[user@]machine`")
	}
	if srv := h.Server(); srv != nil {
		return h, srv, nil
	}
	// Not connected: try now, so the caller hears why not.
	cctx, cancel := context.WithTimeout(ctx, hostConnectTimeout)
	defer cancel()
	if err := h.ConnectNow(cctx); err != nil {
		return nil, nil, err
	}
	h.adoptSessions(cctx)
	if srv := h.Server(); srv != nil {
		return h, srv, nil
	}
	return nil, nil, tools.Errorf(tools.KindUnavailable, "host %s is unreachable: retry when it is back", name).WithDetails("host", name)
}

// hostTarget is a launch on a host: its defaults, checks, files and
// environment are the remote side's (Launch's one sequence, launch.go).
type hostTarget struct{ h *remoteHost }

func (t hostTarget) host() string { return t.h.Spec().Name }

func (t hostTarget) probe() (hosts.Probe, string) { return t.h.Probe() }

func (t hostTarget) defaultShell() string { p, _ := t.probe(); return cmp.Or(p.Shell, "/bin/sh") }
func (t hostTarget) defaultCwd() string   { p, _ := t.probe(); return p.Home }

// check: logs were refused already (target).
func (t hostTarget) check(ctx context.Context, spec LaunchSpec) ([]tools.LogSpec, error) {
	return nil, t.h.CheckProgram(ctx, spec.Cwd, spec.Command[0])
}

func (t hostTarget) server(ctx context.Context, r *reservation) (hosts.Server, error) {
	srv := t.h.Server()
	if srv == nil {
		e := tools.Errorf(tools.KindUnavailable, "host %s is unreachable: retry when it is back", t.h.Spec().Name).WithDetails("host", t.h.Spec().Name)
		e.Retryable = true
		return nil, e
	}
	return srv, nil
}

func (t hostTarget) env(spec LaunchSpec, id string, _ hosts.Server) []string {
	p, rdir := t.probe()
	return t.h.launchEnv(spec, id, p, rdir)
}

func (t hostTarget) wrap(ctx context.Context, spec LaunchSpec, id string, argv []string) ([]string, error) {
	return t.h.Sandboxed(ctx, spec.Sandbox, spec.Cwd, id, argv)
}

func (t hostTarget) writeFiles(ctx context.Context, id string) error {
	if err := t.h.WriteSession(ctx, t.h.o.cfg.StateDir, id); err != nil {
		return tools.Errorf(tools.KindUnavailable, "host %s: write the session file of %s: %w", t.h.Spec().Name, id, err)
	}
	return nil
}

func (t hostTarget) removeFiles(ctx context.Context, id string) {
	t.h.RemoveSession(ctx, id)
}

// retry: a lost connection is the supervisor's to bring back.
func (hostTarget) retry(context.Context, hosts.Server, error) bool { return false }

func (t hostTarget) fail(err error) error {
	return t.h.Err(fmt.Errorf("host %s: %w", t.h.Spec().Name, err))
}

// launchEnv is the -e list of a remote node (launchenv.Remote).
func (h *remoteHost) launchEnv(spec LaunchSpec, id string, p hosts.Probe, rdir string) []string {
	return launchenv.Remote{Env: spec.Env, Extra: spec.ExtraEnv, Ctl: p.Ctl, Path: p.Path, ID: id, SessionFile: hosts.SessionPath(rdir, id),
		Home: rdir, Socket: h.Spec().RemoteSocket(), Host: h.Spec().Name, Sandbox: node.SandboxName(spec.Sandbox)}.List()
}

// adoptSessions runs after every (re)connect: nodes whose sessions still
// run on the host are mirrored again (a new mirror life, reseeded), nodes
// known from metadata are adopted, and nodes whose sessions ended are
// gone.
func (h *remoteHost) adoptSessions(ctx context.Context) {
	o := h.o
	srv := h.Server()
	if srv == nil {
		return
	}
	live, err := o.liveSessions(ctx, srv)
	if err != nil {
		o.log.Warn("host: list sessions", "host", h.Spec().Name, "err", err)
		return
	}
	p, _ := h.Probe()
	serverWasUp := p.ServerUp
	var again []*node.Node
	life := srv.Life()
	life.Lock()
	metas := statefile.ReadMetas(o.cfg.StateDir)
	for _, n := range o.sortedNodes() {
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
			if meta, err := statefile.ReadMeta(o.cfg.StateDir, n.Meta.ID); err == nil {
				o.mu.Lock()
				delete(o.nodes, n.Meta.ID)
				o.mu.Unlock()
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
			o.log.Warn("remote tmux server ended: node lost", "node", n.Meta.ID, "host", h.Spec().Name)
			continue
		}
		o.log.Info("remote session ended while the host was unreachable", "node", n.Meta.ID, "host", h.Spec().Name)
		n.MarkGone()
		o.forget(n.Meta.ID)
	}
	for id, read := range metas {
		if read.Host != h.Spec().Name {
			continue
		}
		if !live[id] {
			o.log.Info("remote session gone: forgetting the node", "node", id, "host", h.Spec().Name)
			o.removeFiles(id)
			continue
		}
		h.adoptOne(ctx, read.NodeMeta, srv)
		delete(live, id)
	}
	life.Unlock()
	for _, n := range again {
		o.reattach(n)
		if nn := o.node(n.Meta.ID); nn != nil && nn != n {
			if err := h.WriteSession(ctx, o.cfg.StateDir, n.Meta.ID); err != nil {
				o.log.Debug("rewrite remote session file", "node", n.Meta.ID, "err", err)
			}
		}
	}
	o.finishPendingCloses(h.Spec().Name, srv)
	if h.o.hooks.hostAdopted != nil {
		h.o.hooks.hostAdopted(h.Spec().Name)
	}
}

// adoptOne mirrors a session of the host known from its metadata (after
// an orchestrator restart). Call with the host's lifecycle lock held.
func (h *remoteHost) adoptOne(ctx context.Context, meta NodeMeta, srv *tmuxServer) {
	o := h.o
	if o.node(meta.ID) != nil {
		return
	}
	meta.Epoch++
	meta.Socket = srv.Socket()
	if err := tools.WriteJSONAtomic(o.metaPath(meta.ID), meta); err != nil {
		o.log.Warn("adopt remote node: write metadata", "node", meta.ID, "err", err)
		return
	}
	if _, err := tools.ReadSession(tools.SessionPath(o.cfg.StateDir, meta.ID)); err != nil {
		if err := o.writeSessionFile(meta); err != nil {
			o.log.Warn("adopt remote node: session file", "node", meta.ID, "err", err)
			return
		}
	}
	if err := h.WriteSession(ctx, o.cfg.StateDir, meta.ID); err != nil {
		o.log.Warn("adopt remote node: remote session file", "node", meta.ID, "err", err)
	}
	srv.Admin().Run(ctx, tmuxctl.Command("set-option", "-p", "-t", "=ts-"+meta.ID+":", "remain-on-exit", "on"))
	n := o.newNode(meta)
	if err := n.Attach(ctx); err != nil {
		o.log.Warn("cannot adopt remote node", "node", meta.ID, "host", h.Spec().Name, "err", err)
		return
	}
	o.mu.Lock()
	o.nodes[meta.ID] = n
	o.mu.Unlock()
	o.log.Info("adopted node", "node", meta.ID, "host", h.Spec().Name)
}

// serverFor is the tmux server a node's session is on.
func (o *Orchestrator) serverFor(meta NodeMeta) hosts.Server {
	if meta.Host != "" {
		if h := o.host(meta.Host); h != nil {
			// The connected server, else the last, else (never reached)
			// one with no clients, so the node is listed with the host's
			// socket.
			return h.LastServer()
		}
	}
	if srv := o.shards.Get(meta.Socket); srv != nil && meta.Host == "" {
		return srv
	}
	return o.shards.List()[0]
}

// remoteLost is clientEnded's hook: true when n's client ended because
// its host's connection is gone (the node is then unreachable and the
// host reconnects); false for a local node or a live connection.
func (o *Orchestrator) remoteLost(n *node.Node) bool {
	if n.Meta.Host == "" {
		return false
	}
	h := o.host(n.Meta.Host)
	if h == nil {
		return false
	}
	if h.Server() == n.Srv && h.Alive() {
		return false
	}
	n.SetStatus(tools.StatusUnreachable, nil)
	h.Kick()
	return true
}

// remoteSessionGone is sessionGone for a node on a host: certain only
// when the host answers.
func (o *Orchestrator) remoteSessionGone(ctx context.Context, m NodeMeta) bool {
	h := o.host(m.Host)
	if h == nil {
		return false
	}
	srv := h.Server()
	if srv == nil {
		return false
	}
	return hosts.SessionGone(ctx, srv, "ts-"+m.ID)
}

// remoteGone removes the remote copy of a gone node's session file.
func (o *Orchestrator) remoteGone(n *node.Node) {
	if n.Meta.Host == "" {
		return
	}
	h := o.host(n.Meta.Host)
	if h == nil || h.Server() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.RemoveSession(ctx, n.Meta.ID); err != nil {
		o.log.Debug("remove remote session file", "node", n.Meta.ID, "err", err)
	}
}

// placeholders lists the nodes of a host that could not be reached at
// start-up, from their metadata, as unreachable (a blank mirror, no
// client) until the host answers and adoptSessions adopts them.
func (h *remoteHost) placeholders() {
	o := h.o
	for id, read := range statefile.ReadMetas(o.cfg.StateDir) {
		if read.Host != h.Spec().Name || read.Err != nil || o.node(id) != nil {
			continue
		}
		o.listUnreachable(read.NodeMeta, node.RevisionBase(read.Epoch+1), "")
		o.log.Info("node listed as unreachable until its host answers", "node", id, "host", h.Spec().Name)
	}
}
