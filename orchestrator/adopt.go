package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// adoptTries bounds how often adopt asks tmux for its sessions when the
// answer cannot be trusted (it lacks the admin session we are attached
// to).
const adoptTries = 5

// testHookListSessions, if set, replaces tmux's answer to list-sessions.
var testHookListSessions func([]string) []string

// liveSessions lists the node ids whose sessions tmux runs. The answer is
// trusted only if it also lists the admin session (which exists: our
// admin client is attached to it); otherwise "I could not tell" would be
// taken for "there are none".
func (o *Orchestrator) liveSessions(ctx context.Context) (map[string]bool, error) {
	var lastErr error
	for try := 0; try < adoptTries; try++ {
		out, err := o.srv.adminClient().Run(ctx, tmuxctl.Command("list-sessions", "-F", "#{session_name} #{@termsprawl_node}"))
		if testHookListSessions != nil {
			out = testHookListSessions(out)
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
	return nil, fmt.Errorf("list sessions: no trustworthy answer in %d tries: %w", adoptTries, lastErr)
}

// sessionGone reports whether tmux says for certain that a node's session
// does not exist (an error that is not tmux's "can't find session" is not
// certainty).
func (o *Orchestrator) sessionGone(ctx context.Context, id string) bool {
	_, err := o.srv.adminClient().Run(ctx, tmuxctl.Command("has-session", "-t", "=ts-"+id))
	var ce *tmuxctl.CommandError
	return errors.As(err, &ce)
}

// adopt attaches to every session of ours that tmux still runs, and
// forgets nodes whose session is certainly gone (their tokens die with
// them). A node's files are never removed while its session exists.
func (o *Orchestrator) adopt(ctx context.Context) error {
	live, err := o.liveSessions(ctx)
	if err != nil {
		return err
	}
	o.removeStaleTemps()
	for id := range live {
		meta, err := o.readMeta(id)
		if err != nil {
			o.log.Warn("node metadata unreadable; adopting with defaults", "node", id, "err", err)
			meta = NodeMeta{ID: id, Name: id, Owner: tools.OperatorNode, Created: time.Now().UTC()}
		}
		// A new life of the mirror: its revisions start above every
		// revision the previous orchestrator handed out.
		meta.Epoch++
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
		if _, err := o.srv.adminClient().Run(ctx, tmuxctl.Command("set-option", "-p", "-t", "=ts-"+id+":", "remain-on-exit", "on")); err != nil {
			o.log.Debug("restore remain-on-exit", "node", id, "err", err)
		}
		n := o.newNode(meta)
		if err := n.attach(ctx); err != nil {
			o.log.Warn("cannot adopt node", "node", id, "err", err)
			continue
		}
		o.mu.Lock()
		o.nodes[id] = n
		o.mu.Unlock()
		o.log.Info("adopted node", "node", id)
	}
	// Forget nodes whose sessions are gone: each one confirmed by tmux.
	files, _ := filepath.Glob(filepath.Join(o.cfg.StateDir, nodesDir, "*.json"))
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".json")
		if live[id] || !tools.ValidNodeID(id) {
			continue
		}
		if !o.sessionGone(ctx, id) {
			o.log.Warn("node not adopted but its session may exist: keeping its files", "node", id)
			continue
		}
		o.removeFiles(id)
	}
	return nil
}

// removeStaleTemps removes the temporary files of atomic writes that a
// killed orchestrator left in nodes/ and sessions/ (the state dir's lock
// is held: nobody else writes there).
func (o *Orchestrator) removeStaleTemps() {
	for _, dir := range []string{filepath.Join(o.cfg.StateDir, nodesDir), filepath.Dir(tools.SessionPath(o.cfg.StateDir, "x"))} {
		temps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
		for _, t := range temps {
			os.Remove(t)
		}
	}
}

func (o *Orchestrator) readMeta(id string) (NodeMeta, error) {
	var m NodeMeta
	b, err := tools.ReadFileBounded(o.metaPath(id), tools.MaxStateFileBytes)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("parse %s: %w", o.metaPath(id), err)
	}
	if m.ID != id {
		return m, fmt.Errorf("%s names node %q", o.metaPath(id), m.ID)
	}
	return m, nil
}

// revisionBase is the revision a node's mirror starts at in its epoch-th
// orchestrator life: epoch in the high 32 bits. 2^21 restarts stay below
// 2^53, the largest integer a JSON number carries exactly everywhere.
func revisionBase(epoch uint64) uint64 { return epoch << 32 }
