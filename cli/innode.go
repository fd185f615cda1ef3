package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

// termsprawl run inside a node acts with that node's own session, not the
// operator's (CONTRACT §26–§27, issue 34 item 6): the node's program runs
// as the same Unix user and could read operator.json, so without this an
// agent could approve its own permission prompts with `termsprawl answer
// ID allow`. It knows it is inside a node from $TERMSPRAWL_SESSION_FILE
// (a node's session) and from the pane it runs in ($TMUX on one of this
// termsprawl's private servers). A human typing in a node's shell asks
// for the operator explicitly with `termsprawl --operator …`; C-b a's
// picker, which tmux runs outside the node, passes it. The sandbox
// (§27) hides operator.json from agents for good.

// nodeContext is the node termsprawl runs in.
type nodeContext struct {
	Node    string // its id, when known
	Session string // its session file, when known
	Why     string // how termsprawl knows
}

// insideNode reports the node this process runs in, if any.
func insideNode(stateDir, socket string) (nodeContext, bool) {
	if p := strings.TrimSpace(os.Getenv(SessionEnv)); p != "" {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		s, err := tools.ReadSession(p)
		if err == nil && s.Role == tools.RoleOperator {
			return nodeContext{}, false
		}
		c := nodeContext{Session: p, Node: s.Node, Why: "$" + SessionEnv + " is a node's session"}
		if c.Node == "" {
			c.Node = strings.TrimSuffix(filepath.Base(p), ".json")
		}
		return c, true
	}
	if tmuxIsOurs(os.Getenv("TMUX"), socket) {
		c := nodeContext{Why: "it runs in a pane of termsprawl's tmux server"}
		if id := os.Getenv("TERMSPRAWL_NODE"); tools.ValidNodeID(id) {
			c.Node, c.Session = id, tools.SessionPath(stateDir, id)
		}
		return c, true
	}
	return nodeContext{}, false
}

// tmuxIsOurs reports whether $TMUX (SOCKET-PATH,PID,SESSION) names one of
// termsprawl's private servers on socket (SOCKET, SOCKET-2, …).
func tmuxIsOurs(env, socket string) bool {
	path, _, ok := strings.Cut(env, ",")
	if !ok || path == "" || socket == "" {
		return false
	}
	base := filepath.Base(path)
	if base == socket {
		return true
	}
	rest, ok := strings.CutPrefix(base, socket+"-")
	return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
}

// inNodeHint is what an operator-only refusal inside a node adds.
func (h *human) inNodeHint() string {
	who := "a node"
	if h.inNode.Node != "" {
		who = "node " + h.inNode.Node
	}
	_, answer := h.keys()
	return fmt.Sprintf("termsprawl runs inside %s (%s), so it acts with that node's own session, not the operator's: a human answers from the dashboard, %s or `C-b %s` (which tmux runs outside the sandbox) or a shell of their own",
		who, h.inNode.Why, answer, tools.PickerKey)
}

// refuseInNode refuses what only the human may do locally (approving a
// repository's files) when termsprawl runs inside a node.
func (h *human) refuseInNode(what string) (int, bool) {
	if !h.insideNode {
		return 0, false
	}
	fmt.Fprintf(h.stderr, "%s: refused: %s is the human's: %s\n", h.prefix(), what, h.inNodeHint())
	return ExitNo, true
}
