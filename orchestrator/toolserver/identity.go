package toolserver

import (
	"context"
	"errors"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// operatorIdentity is the human CLI's identity (sessions/operator.json).
var operatorIdentity = tools.Identity{Node: tools.OperatorNode, Role: tools.RoleOperator, Incarnation: tools.OperatorNode}

// loadToken reads a node's session file into the token table, bound to
// that node's incarnation.
func (s *Server) loadToken(m orchestrator.NodeMeta) {
	sess, err := tools.ReadSession(tools.SessionPath(s.stateDir, m.ID))
	if err != nil {
		s.log.Warn("node session file unreadable", "node", m.ID, "err", err)
		return
	}
	s.mu.Lock()
	s.tokens[sess.Token] = tools.Identity{Node: m.ID, Role: tools.RoleAgent, Incarnation: m.Incarnation()}
	s.mu.Unlock()
}

// dropToken forgets the token of one node incarnation.
func (s *Server) dropToken(incarnation string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok, ident := range s.tokens {
		if ident.Incarnation == incarnation && ident.Role != tools.RoleOperator {
			delete(s.tokens, tok)
		}
	}
}

// Authenticate compares the token with every known one in constant time.
// A node's token is valid only while that same incarnation lives.
func (s *Server) Authenticate(token string) (tools.Identity, bool) {
	found, ok := s.lookupToken(token)
	if !ok {
		// A node born just now: its token is read on the engine event
		// feed (feed.go). Bounded, so an unknown token is not held long.
		ctx, cancel := context.WithTimeout(s.ctx, launchAuthWait)
		if s.feed.sync(ctx) == nil {
			found, ok = s.lookupToken(token)
		}
		cancel()
	}
	if ok && found.Role != tools.RoleOperator {
		m, live := s.eng.identity.Meta(found.Node)
		if !live && s.hooks.notLive != nil {
			s.hooks.notLive(found.Node)
		}
		if !live && s.eng.identity.AwaitLaunch(context.Background(), found.Node, launchAuthWait) {
			// Born but not yet registered: its program called before its
			// launch was done (a probe's first publish); the launch has
			// settled now.
			m, live = s.eng.identity.Meta(found.Node)
		}
		if !live || m.Incarnation() != found.Incarnation {
			ok = false // the node is gone: its token died with it
		}
	}
	if !ok {
		return tools.Identity{}, false
	}
	return found, true
}

// lookupToken compares the token with every known one in constant time.
func (s *Server) lookupToken(token string) (tools.Identity, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var found tools.Identity
	ok := false
	for tok, ident := range s.tokens {
		if tools.TokenEqual(tok, token) {
			found, ok = ident, true
		}
	}
	return found, ok
}

// launchAuthWait bounds how long a call with the token of a node still
// being launched waits for the launch to register it.
const launchAuthWait = 10 * time.Second

// canDrive reports whether caller may drive (send input to, resize,
// signal, close) the node whose metadata is m: the operator always; an
// agent its own node and every node it launched, directly or through the
// nodes it launched. The chain is kept as incarnations at launch, so
// closing a middle node leaves it intact and a later node that reuses an
// id gains nothing.
func canDrive(caller tools.Identity, m orchestrator.NodeMeta) bool {
	if caller.Role == tools.RoleOperator || caller.Incarnation == m.Incarnation() {
		return true
	}
	for _, a := range m.Ancestors {
		if a == caller.Incarnation {
			return true
		}
	}
	return false
}

// mustDrive is canDrive as an error.
func (c *call) mustDrive(id string) error {
	m, ok := c.s.eng.identity.Meta(id)
	if !ok {
		if err := c.s.eng.identity.LostError(id); err != nil {
			// Lost after a reboot (restore.go): the operator's to restore
			// or forget (the engine answers conflict to anything else).
			if c.caller.Role == tools.RoleOperator {
				return nil
			}
			return tools.Errorf(tools.KindForbidden, "node %q may not act on terminal %q: %v; only the operator restores or forgets a lost terminal", c.caller.Node, id, err)
		}
		return tools.Errorf(tools.KindNotFound, "no terminal %q: call terminal_list to see the terminals", id)
	}
	if !canDrive(c.caller, m) {
		return tools.Errorf(tools.KindForbidden, "node %q may not drive terminal %q: agents drive only themselves and the terminals they launched (reading is allowed)", c.caller.Node, id)
	}
	return nil
}

// terminalArg is the argument every terminal operation has. Embedded in
// a mutation's args it makes the drive rule apply (see mutator).
type terminalArg struct {
	Terminal string `json:"terminal"`
}

func (a terminalArg) driven() string { return a.Terminal }

func (a *terminalArg) ref() *string { return &a.Terminal }

// nodeArg is a node named by the `node` argument (agent_send).
type nodeArg struct {
	Node string `json:"node"`
}

func (a *nodeArg) ref() *string { return &a.Node }

// optionalNodeArg is a `node` argument that may be left out (agent_status:
// every agent); when given it is resolved and checked like nodeArg.
type optionalNodeArg struct {
	Node string `json:"node"`
}

func (a *optionalNodeArg) ref() *string   { return &a.Node }
func (a *optionalNodeArg) optional() bool { return true }

// namesNode is implemented by args that name a node: the handler wrappers
// resolve the name (id, unique name or unique id prefix) to an id before
// the handler runs.
type namesNode interface{ ref() *string }

// resolve replaces the node a's args name with its id, and refuses a
// node outside the realm of a caller kept to its host (realm.go).
func (c *call) resolve(a any) error {
	n, ok := a.(namesNode)
	if !ok {
		return nil
	}
	if o, ok := a.(interface{ optional() bool }); ok && o.optional() && *n.ref() == "" {
		return nil
	}
	id, err := c.s.eng.identity.Resolve(*n.ref())
	if err != nil {
		var te *tools.Error
		if o, ok := a.(interface{ orOther() bool }); ok && o.orOther() && errors.As(err, &te) && te.Kind == tools.KindNotFound {
			return nil // no such node: the handler names it otherwise (a gone node's worktree, worktree.go)
		}
		return err
	}
	if err := c.inRealm(id); err != nil {
		return err
	}
	*n.ref() = id
	return nil
}

// drivenTerminal is implemented by the args of mutations that act on a
// terminal: the caller must be allowed to drive it.
type drivenTerminal interface{ driven() string }

func identityHandlers() map[string]handler {
	return map[string]handler{
		"session_info": reader(sessionInfo),
		"guide_read":   reader(guideRead),
	}
}

func sessionInfo(c *call, _ noArgs) (tools.SessionInfo, error) {
	s := c.s
	info := tools.SessionInfo{Node: c.caller.Node, Role: c.caller.Role, InstanceID: s.instance, Version: s.version,
		TmuxSocket: s.eng.identity.Socket(), Operations: tools.OperationNames(),
		PreferencesFile: tools.PreferencesPath(s.stateDir), StateDir: s.stateDir,
		// Nodes are spread over shards: the operator's hint names no
		// server that could be the wrong one.
		Attach: "tmux -L SOCKET attach-session -t ts-NODE (SOCKET: the node's tmux_socket in terminal_list)"}
	if c.caller.Role != tools.RoleOperator {
		info.TmuxSession = "ts-" + c.caller.Node
		if m, ok := s.eng.identity.Meta(c.caller.Node); ok && m.Socket != "" {
			info.TmuxSocket = m.Socket // the node's shard
			info.Attach = "tmux -L " + m.Socket + " attach-session -t ts-" + c.caller.Node
		}
	}
	info.MirrorReseeds, info.MirrorHeals = s.eng.identity.MirrorCounts()
	info.TmuxServerDeaths, info.LastTmuxServerDeath = s.eng.identity.ServerHealth()
	if c.caller.Role == tools.RoleOperator {
		info.MonitorURL = s.monitorURL()
	}
	return info, nil
}

type guideArgs struct {
	Topic string `json:"topic"`
}

func guideRead(_ *call, a guideArgs) (tools.GuideText, error) {
	text, ok := tools.Guide(a.Topic)
	if !ok {
		return tools.GuideText{}, tools.Errorf(tools.KindNotFound, "no guide %q: topics are %v", a.Topic, tools.GuideTopics())
	}
	return tools.GuideText{Topic: a.Topic, Text: text}, nil
}
