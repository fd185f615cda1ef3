package node

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/tmuxctl"
)

// A node's control client: its server's one mirror client, shared by all
// the server's nodes (hosts/mirror.go): on a host, so that 64 nodes and
// more fit one ssh connection under sshd's MaxSessions 10 (CONTRACT §23);
// on a local shard, so that a node costs no tmux client process of its
// own (issue 41, PERFORMANCE.md). With Config.ClientPerNode a local node
// attaches a client of its own.

// startClient attaches the node's control client and finds its pane and
// size; it sets client, pane, stream, events and clientDone (and link for
// a host's node).
func (n *Node) startClient(ctx context.Context) (cols, rows int, err error) {
	if ts, ok := n.Srv.(*hosts.Tmux); ok && ts.Shared() {
		m := ts.Mirror()
		if !ts.Remote() {
			var err error
			if m, err = ts.LocalMirror(ctx); err != nil {
				return 0, 0, fmt.Errorf("attach to %s: %w", n.Session(), err)
			}
		}
		if m == nil {
			return 0, 0, fmt.Errorf("attach to %s: %w", n.Session(), hosts.ErrUnreachable)
		}
		l, err := m.Link(ctx, n.Session())
		if err != nil {
			return 0, 0, err
		}
		n.Client, n.Pane, n.link, n.mirror = m.Client(), l.Pane, l, m
		n.Stream = n.Client.Pane(n.Pane)
		n.events, n.clientDone = l.Events, l.Done
		return l.Columns, l.Rows, nil
	}
	c, err := tmuxctl.Start(ctx, n.Srv.ClientConfig("attach-session", "-t", "="+n.Session()))
	if err != nil {
		return 0, 0, fmt.Errorf("attach control client to %s: %w", n.Session(), err)
	}
	out, err := c.Run(ctx, tmuxctl.Command("display-message", "-p", "-t", "="+n.Session()+":", "#{pane_id} #{pane_width} #{pane_height}"))
	if err != nil {
		c.Close()
		return 0, 0, fmt.Errorf("find pane of %s: %w", n.Session(), err)
	}
	if len(out) != 1 {
		c.Close()
		return 0, 0, fmt.Errorf("find pane of %s: %d reply lines %q, want 1", n.Session(), len(out), out)
	}
	f := strings.Fields(out[0])
	if len(f) != 3 {
		c.Close()
		return 0, 0, fmt.Errorf("find pane of %s: unexpected %q", n.Session(), out[0])
	}
	cols, _ = strconv.Atoi(f[1])
	rows, _ = strconv.Atoi(f[2])
	n.Client, n.Pane = c, f[0]
	n.Stream = c.Pane(n.Pane)
	n.events, n.clientDone = c.Events(), c.Done()
	return cols, rows, nil
}

// leaveClient ends the node's share of its control client: its own
// client is closed; a node on a shared server unlinks its window from the
// mirror session (its pane was paused for the mirror client first:
// detach).
func (n *Node) leaveClient() {
	if n.link == nil {
		n.Client.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n.mirror.Unlink(ctx, n.link)
}

// SharedClient reports whether the node's control client is its server's
// mirror client (not its own: no client pid of its own to wait for).
func (n *Node) SharedClient() bool { return n.link != nil }

// Cmd is the client for a command about the node that needs no order
// against the pane's output (input, captures, queries): on a local shared
// server the admin client, so that the reply never waits behind the
// neighbours' output queued on the mirror client (a flooding neighbour's
// backlog); otherwise the node's client. Seeds and heals, whose replies
// must fall at their place in the output stream, use n.Client.
func (n *Node) Cmd() *tmuxctl.Client {
	if n.link != nil && !n.Srv.Remote() {
		if a := n.Srv.Admin(); a != nil {
			return a
		}
	}
	return n.Client
}
