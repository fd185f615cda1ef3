package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/lostnodes"
	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/orchestrator/statefile"
	"github.com/termsprawl/termsprawl/tools"
)

// Surviving a reboot (CONTRACT §25): each node's launch is kept in
// nodes/<id>.launch.json and its last screen in nodes/<id>.screen.json
// (keepscreen.go). When `up` finds a node whose tmux server is gone, the
// node is listed as lost with that screen until it is restored (the same
// id, name, directory and recording; a new token and incarnation) or
// forgotten.

// LaunchRecord is what a node's launch was (statefile.LaunchRecord, kept
// in nodes/<id>.launch.json).
type LaunchRecord = statefile.LaunchRecord

func (o *Orchestrator) launchPath(id string) string {
	return statefile.Path(o.cfg.StateDir, id, statefile.Launch)
}

func (o *Orchestrator) screenPath(id string) string {
	return statefile.Path(o.cfg.StateDir, id, statefile.Screen)
}

// writeLaunch keeps a launch (create, before the session exists). A
// restored node keeps the launch it was restored from (not the resume
// arguments of this start), in the directory it runs in.
func (o *Orchestrator) writeLaunch(id string, spec LaunchSpec, socket string, restore *lostnodes.Entry) error {
	rec := statefile.NewLaunchRecord(spec, socket)
	if restore != nil {
		rec = restore.Launch
		rec.Spec.Cwd = spec.Cwd
		rec.Launched, rec.Socket = time.Now().UTC(), socket
	}
	if err := statefile.WriteLaunch(o.cfg.StateDir, id, rec); err != nil {
		return fmt.Errorf("write the launch of %s: %w", id, err)
	}
	return nil
}

// readLaunch reads a node's kept launch.
func (o *Orchestrator) readLaunch(id string) (LaunchRecord, error) {
	return statefile.ReadLaunch(o.cfg.StateDir, id)
}

// SetConversation keeps an agent's own conversation id (from its hooks)
// with its launch, so a restore resumes it. Only a change is written.
func (o *Orchestrator) SetConversation(id string, conv tools.ConversationID) error {
	conversation := conv.String()
	n := o.node(id)
	if n == nil || conversation == "" {
		return nil
	}
	n.ConvMu.Lock()
	defer n.ConvMu.Unlock()
	if n.Conversation == conversation {
		return nil
	}
	rec, err := o.readLaunch(id)
	if err != nil {
		return fmt.Errorf("keep the conversation of %s: %w", id, err)
	}
	rec.Conversation = conversation
	if err := statefile.WriteLaunch(o.cfg.StateDir, id, rec); err != nil {
		return fmt.Errorf("keep the conversation of %s: %w", id, err)
	}
	n.Conversation = conversation
	return nil
}

// serverWasGone reports whether the tmux server of a local node's socket
// was not running when this orchestrator started: New started the first
// one itself, connectShards connects every other one that runs.
func (o *Orchestrator) serverWasGone(socket string) bool {
	socket = cmp.Or(socket, o.cfg.Socket)
	if socket == o.cfg.Socket {
		return o.startedFirst
	}
	return o.shards.Get(socket) == nil
}

// keepLost lists a node adoption did not find as lost when it was lost
// before or its local tmux server was gone (lostnodes.Table.Adopt).
// False: the caller forgets it as before.
func (o *Orchestrator) keepLost(m NodeMeta) bool {
	if m.Host != "" || (m.LostAt.IsZero() && !o.serverWasGone(m.Socket)) {
		return false // a host's, or its server runs: the session itself ended
	}
	l := o.lost.Adopt(m)
	if l == nil {
		return false
	}
	o.log.Info("node lost: its tmux server is gone", "node", m.ID, "status", l.Status)
	return true
}

// keepExit records a node's exit.
func (o *Orchestrator) keepExit(id string, code int) {
	if err := statefile.WriteExit(o.cfg.StateDir, id, code); err != nil {
		o.log.Warn("record a node's exit", "node", id, "err", err)
	}
}

// loseNode lists a local node whose tmux server died while termsprawl
// runs (CONTRACT §26), at once: lost, with its last screen, restorable
// without a restart, its token dead; or, when its program had exited
// before (its recorded exit), exited with its code. A node without a
// kept launch stays listed as exited with the reason, as before.
func (o *Orchestrator) loseNode(n *node.Node, reason string) {
	status, code, _ := n.State()
	m := n.Meta
	rec, err := o.readLaunch(m.ID)
	if m.Host != "" || err != nil {
		n.MarkLost("the tmux server died (" + reason + "): the program is gone; terminal_close removes the node")
		return
	}
	var exited *int
	if status == tools.StatusExited {
		exited = code
	}
	l := o.lost.Died(m, n.Snapshot(), exited, rec)
	o.mu.Lock()
	if o.nodes[m.ID] == n {
		delete(o.nodes, m.ID)
	}
	o.lost.Put(l) // in the same step: no reader sees it in neither table
	o.mu.Unlock()
	// Listed lost first: whoever wakes on the old mirror's end sees it.
	if l.Status == tools.StatusLost {
		n.MarkListedLost("the tmux server died (" + reason + ")")
	} else {
		n.MarkLost("the tmux server died (" + reason + ")")
	}
	n.StopRecording()
	go n.Scr.Close()
	o.gone(n) // its token and its agent state go
	o.statusChanged()
	o.log.Info("node lost: its tmux server died", "node", m.ID, "status", l.Status)
	if h := o.hooks.lost; h != nil {
		h(m.ID)
	}
}

// lostSorted returns the lost entries by creation, leaving out those
// whose restored node is registered already.
func (o *Orchestrator) lostSorted() []*lostnodes.Entry {
	all := o.lost.Sorted()
	out := all[:0]
	o.mu.Lock()
	for _, l := range all {
		if o.nodes[l.Meta.ID] == nil {
			out = append(out, l)
		}
	}
	o.mu.Unlock()
	return out
}

// LostLaunch is what a restore of a lost node would start: its metadata
// and its kept launch (the tool server adds an agent's resume).
func (o *Orchestrator) LostLaunch(id string) (NodeMeta, LaunchRecord, error) {
	l := o.lost.Get(id)
	if l == nil {
		return NodeMeta{}, LaunchRecord{}, o.notLost(id)
	}
	return l.Meta, l.Launch, nil
}

// NodeLaunch returns a live node's metadata and kept launch, with the
// agent's conversation id once its hooks reported one (a fork continues
// it, as a restore resumes a lost node's: toolserver/restore.go).
func (o *Orchestrator) NodeLaunch(id string) (NodeMeta, LaunchRecord, error) {
	n, err := o.lookup(id)
	if err != nil {
		return NodeMeta{}, LaunchRecord{}, err
	}
	rec, err := o.readLaunch(id)
	if err != nil {
		return NodeMeta{}, LaunchRecord{}, fmt.Errorf("read the kept launch of %s: %w", id, err)
	}
	return n.Meta, rec, nil
}

// notLost is the error of a restore or forget of a node that is not lost.
func (o *Orchestrator) notLost(id string) error {
	if n := o.node(id); n != nil && !n.IsClosing() {
		status, _, _ := n.State()
		return tools.Errorf(tools.KindConflict, "terminal %q is %s, not lost: only a node whose tmux server is gone is restored", id, status).
			WithDetails("status", status)
	}
	return tools.Errorf(tools.KindNotFound, "no terminal %q: call terminal_list to see the terminals (lost ones have status lost)", id)
}

// RestoreOptions change what a restore starts: Cwd another directory (the
// kept one is gone), Command another command line (an agent's resume).
type RestoreOptions struct {
	Cwd     string
	Command []string
}

// Restore starts a lost node again: the same id, name, directory (or
// opts.Cwd), environment and recording (resumed, with a gap), a new
// token and incarnation; nothing else of the old node. A restore that
// fails leaves the node lost as it was.
func (o *Orchestrator) Restore(ctx context.Context, id string, opts RestoreOptions) (tools.NodeInfo, error) {
	l, err := o.lost.BeginRestore(id)
	if errors.Is(err, lostnodes.ErrNotListed) {
		return tools.NodeInfo{}, o.notLost(id)
	} else if err != nil {
		return tools.NodeInfo{}, err
	}
	ok := false
	defer func() { o.lost.EndRestore(l, ok) }()
	spec, err := l.RestoreSpec(opts.Cwd, opts.Command)
	if err != nil {
		return tools.NodeInfo{}, err
	}
	info, err := o.launch(ctx, spec, l)
	if err != nil {
		// Launch's rollback removed the node's files: put the lost node's
		// back as they were.
		o.lost.Rewrite(l)
		return tools.NodeInfo{}, fmt.Errorf("restore %s: %w", id, err)
	}
	ok = true
	o.log.Info("restored lost node", "node", id, "cwd", spec.Cwd, "command", spec.Command[0])
	return info, nil
}

// Forget drops a lost (or exited-before) node and its files. A node that
// runs is refused: terminal_close ends it.
func (o *Orchestrator) Forget(id string) error {
	if _, err := o.lost.Take(id); errors.Is(err, lostnodes.ErrNotListed) {
		if n := o.node(id); n != nil && !n.IsClosing() {
			status, _, _ := n.State()
			return tools.Errorf(tools.KindConflict, "terminal %q is %s, not lost: terminal_close (termsprawl kill) ends a node that runs", id, status).
				WithDetails("status", status)
		}
		return tools.Errorf(tools.KindNotFound, "no terminal %q: call terminal_list to see the terminals", id)
	} else if err != nil {
		return err
	}
	o.removeFiles(id)
	o.log.Info("forgot lost node", "node", id)
	return nil
}

// LostIDs are the ids of the nodes listed lost (not exited), by creation.
func (o *Orchestrator) LostIDs() []string {
	var ids []string
	for _, l := range o.lostSorted() {
		if l.Status == tools.StatusLost {
			ids = append(ids, l.Meta.ID)
		}
	}
	return ids
}

// LostError is the error of an operation on a lost node (conflict, saying
// how to restore it), or nil when id is not lost.
func (o *Orchestrator) LostError(id string) error {
	l := o.lost.Get(id)
	if l == nil || o.node(id) != nil {
		return nil
	}
	return l.Err()
}
