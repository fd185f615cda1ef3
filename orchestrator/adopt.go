package orchestrator

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/launchenv"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// adoptTries bounds how often adopt asks tmux for its sessions when the
// answer cannot be trusted (it lacks the admin session we are attached
// to).
const adoptTries = 5

// liveSessions lists the node ids whose sessions a shard runs. The answer
// is trusted only if it also lists the admin session (which exists: our
// admin client is attached to it); otherwise "I could not tell" would be
// taken for "there are none".
func (o *Orchestrator) liveSessions(ctx context.Context, srv hosts.Server) (map[string]bool, error) {
	var lastErr error
	for try := 0; try < adoptTries; try++ {
		out, err := srv.Admin().Run(ctx, tmuxctl.Command("list-sessions", "-F", "#{session_name} #{@termsprawl_node}"))
		if o.hooks.listSessions != nil {
			out = o.hooks.listSessions(out)
		}
		if err != nil {
			lastErr = err
			continue
		}
		live := map[string]bool{}
		sawAdmin := false
		for _, line := range out {
			name, id, _ := strings.Cut(line, " ")
			if name == adminSession {
				sawAdmin = true
			}
			if id != "" && name == "ts-"+id && tools.ValidNodeID(id) {
				live[id] = true
			}
		}
		if sawAdmin {
			return live, nil
		}
		lastErr = fmt.Errorf("tmux listed %d sessions without %s: %q", len(out), adminSession, out)
	}
	return nil, fmt.Errorf("list sessions on %s: no trustworthy answer in %d tries: %w", srv.Socket(), adoptTries, lastErr)
}

// sessionGone reports whether it is certain that a node's session does
// not exist: its shard's server is not running, or tmux says "can't find
// session" (any other error is not certainty).
func (o *Orchestrator) sessionGone(ctx context.Context, m NodeMeta) bool {
	if m.Host != "" {
		return o.hosts.SessionGone(ctx, m)
	}
	socket := cmp.Or(m.Socket, o.cfg.Socket)
	srv := o.shards.Get(socket)
	if srv == nil {
		return !hosts.Running(ctx, o.cfg.Tmux, socket, launchenv.Tmux())
	}
	return hosts.SessionGone(ctx, srv, "ts-"+m.ID)
}

// connectShards connects to every shard that runs besides the first
// (hosts.Shards.Connect): the sockets named in node metadata and those
// named SOCKET-N in tmux's socket directory.
func (o *Orchestrator) connectShards(ctx context.Context, metas map[string]statefile.MetaRead) error {
	var named []string
	for _, m := range metas {
		// A host's socket is not a shard (on a test host that is this
		// very machine it would even answer).
		if m.Socket != "" && m.Host == "" {
			named = append(named, m.Socket)
		}
	}
	return o.shards.Connect(ctx, named)
}

// adopt attaches to every session of ours that a shard still runs, and
// forgets nodes whose session is certainly gone (their tokens die with
// them). A node's files are never removed while its session may exist.
func (o *Orchestrator) adopt(ctx context.Context) error {
	metas := statefile.ReadMetas(o.cfg.StateDir)
	if err := o.connectShards(ctx, metas); err != nil {
		return err
	}
	statefile.RemoveStaleTemps(o.cfg.StateDir)
	live := map[string]hosts.Server{}
	for _, srv := range o.shards.List() {
		ids, err := o.liveSessions(ctx, srv)
		if err != nil {
			return err
		}
		for id := range ids {
			live[id] = srv
		}
	}
	for id, srv := range live {
		read, ok := metas[id]
		meta, err := read.NodeMeta, read.Err
		if !ok {
			err = fmt.Errorf("no metadata file for a running session")
		}
		if err != nil {
			o.log.Warn("node metadata unreadable; adopting with defaults", "node", id, "err", err)
			meta = NodeMeta{ID: id, Name: id, Owner: tools.OperatorNode, Created: time.Now().UTC()}
		}
		// A new life of the mirror: its revisions start above every
		// revision the previous orchestrator handed out.
		meta.Epoch++
		meta.Socket = srv.Socket()
		if err := tools.WriteJSONAtomic(o.metaPath(id), meta); err != nil {
			return fmt.Errorf("write node metadata: %w", err)
		}
		if _, err := tools.ReadSession(tools.SessionPath(o.cfg.StateDir, id)); err != nil {
			if err := o.writeSessionFile(meta); err != nil {
				return err
			}
		}
		// A close interrupted by a crash may have left remain-on-exit off:
		// the program's later exit would then make the node vanish.
		if _, err := srv.Admin().Run(ctx, tmuxctl.Command("set-option", "-p", "-t", "=ts-"+id+":", "remain-on-exit", "on")); err != nil {
			o.log.Debug("restore remain-on-exit", "node", id, "err", err)
		}
		n := o.newNode(meta)
		if err := n.Attach(ctx); err != nil {
			// Its session runs: keep it listed, so it can be seen and
			// closed (not invisible until the next restart).
			o.log.Warn("cannot adopt node: listed unattached", "node", id, "err", err)
			o.unattached(meta, err)
			continue
		}
		o.mu.Lock()
		o.nodes[id] = n
		o.mu.Unlock()
		if in, ok := n.RecoverInput(ctx); ok {
			o.interrupted.Add(in)
		}
		o.log.Info("adopted node", "node", id, "socket", srv.Socket())
	}
	// Forget nodes whose sessions are gone: each one confirmed.
	for id, m := range metas {
		if live[id] != nil || m.Host != "" {
			continue // remote nodes are the host's business (orchestrator/hostnodes)
		}
		if !o.sessionGone(ctx, m.NodeMeta) {
			o.log.Warn("node not adopted but its session may exist: keeping its files", "node", id)
			continue
		}
		if m.Err == nil && o.keepLost(m.NodeMeta) {
			continue // listed lost with its last screen (lost.go)
		}
		o.removeFiles(id)
	}
	return nil
}

// unattached lists a node whose session runs but whose mirror could not
// attach (adoption): a blank mirror, no client, status unreachable with
// the reason. Operations other than close answer unavailable (reachable);
// CloseNode ends its session from tmux's own account of the pane
// (hosts.EndSession); the next orchestrator tries to adopt it again.
func (o *Orchestrator) unattached(meta NodeMeta, err error) {
	o.listUnreachable(meta, node.RevisionBase(meta.Epoch),
		"termsprawl could not attach its mirror of the session ("+err.Error()+"): the program may still run; terminal_close ends it, a restart tries again")
}

// listUnreachable registers a placeholder for a node with no mirror: a
// blank screen from revision base, no client, no pump, status unreachable
// with reason (empty: none). The one way both an unattached session
// (unattached) and a node of an unreachable host (placeholders) are
// listed.
func (o *Orchestrator) listUnreachable(meta NodeMeta, base uint64, reason string) {
	n := o.newNode(meta)
	n.Unmirrored(DefaultColumns, DefaultRows, base, tools.StatusUnreachable, reason)
	o.mu.Lock()
	o.nodes[meta.ID] = n
	o.mu.Unlock()
}
