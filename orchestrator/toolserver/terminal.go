package toolserver

import (
	"encoding/base64"
	"os"
	"path/filepath"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

func terminalHandlers() map[string]handler {
	return map[string]handler{
		"terminal_launch":        mutator(terminalLaunch),
		"terminal_list":          reader(terminalList),
		"terminal_snapshot":      reader(terminalSnapshot),
		"terminal_read":          reader(terminalRead),
		"terminal_capture_since": reader(terminalCaptureSince),
		"terminal_wait_for":      reader(terminalWaitFor),
		"terminal_scrollback":    reader(terminalScrollback),
		"terminal_type": mutator(inputOp(func(c *call, a inputArgs) (tools.InputResult, error) {
			return c.s.eng.terminals.Type(c.ctx, a.Terminal, a.Text, a.Wait)
		})),
		"terminal_press": mutator(inputOp(func(c *call, a inputArgs) (tools.InputResult, error) {
			return c.s.eng.terminals.Press(c.ctx, a.Terminal, a.Keys, a.Wait)
		})),
		"terminal_paste": mutator(inputOp(func(c *call, a inputArgs) (tools.InputResult, error) {
			return c.s.eng.terminals.Paste(c.ctx, a.Terminal, a.Text, a.Wait)
		})),
		"terminal_submit": mutator(inputOp(func(c *call, a inputArgs) (tools.InputResult, error) {
			return c.s.eng.terminals.Submit(c.ctx, a.Terminal, a.Text, a.Wait)
		})),
		"terminal_interrupt": mutator(inputOp(func(c *call, a inputArgs) (tools.InputResult, error) {
			return c.s.eng.terminals.Interrupt(c.ctx, a.Terminal, a.Wait)
		})),
		"terminal_resize":   mutator(terminalResize),
		"terminal_signal":   mutator(terminalSignal),
		"terminal_close":    mutator(terminalClose),
		"terminal_external": mutator(terminalExternal),
		"terminal_focus":    mutator(terminalFocus),
	}
}

// stateOf is the fresh snapshot every receipt carries, or ClosedState
// when the terminal is gone.
func (c *call) stateOf(id string) any {
	snap, err := c.s.eng.terminals.Snapshot(c.ctx, id)
	if err != nil {
		return tools.ClosedState{Terminal: id, Status: "closed"}
	}
	return snap
}

// launchFor launches a node owned by the caller (and, for an agent, with
// the caller as its parent), records the caller's chain of incarnations
// as the new node's ancestors, and registers the new node's token.
func (c *call) launchFor(spec orchestrator.LaunchSpec) (tools.NodeInfo, error) {
	spec.Owner = c.caller.Node
	if err := c.launchRealm(&spec); err != nil {
		return tools.NodeInfo{}, err
	}
	c.sandboxFloor(&spec)
	if m, _ := c.s.eng.terminals.Meta(c.caller.Node); spec.Cwd == "" && c.caller.Role != tools.RoleOperator && m.Host == spec.Host {
		// A node's launches start where its program is (CONTRACT §10).
		spec.Cwd = c.s.eng.terminals.CurrentPath(c.ctx, c.caller.Node)
	}
	if spec.Host == "" && len(spec.Logs) > 0 {
		// Logs inside the state dir are refused before anything is made
		// (the follower also refuses them at every open).
		cwd := spec.Cwd
		if cwd == "" {
			cwd, _ = os.Getwd()
		}
		if filepath.IsAbs(cwd) {
			if err := c.s.eng.terminals.CheckLogs(spec.Logs, cwd); err != nil {
				return tools.NodeInfo{}, err
			}
		}
	}
	if c.caller.Role != tools.RoleOperator {
		spec.Parent = c.caller.Node
		spec.Ancestors = []string{c.caller.Incarnation}
		if m, ok := c.s.eng.terminals.Meta(c.caller.Node); ok {
			spec.Ancestors = append(spec.Ancestors, m.Ancestors...)
		}
	}
	if c.caller.Role != tools.RoleOperator {
		release, err := c.s.reserveNode(c.caller, spec.Ancestors)
		if err != nil {
			return tools.NodeInfo{}, err
		}
		defer release()
	}
	var wt *wtEntry // the node's git worktree (worktree.go)
	madeWt := spec.Worktree != nil && spec.Worktree.Path == ""
	if spec.Worktree != nil {
		var err error
		if wt, err = c.prepareWorktree(&spec); err != nil {
			return tools.NodeInfo{}, err
		}
	}
	info, err := c.s.eng.terminals.Launch(c.ctx, spec)
	if err != nil {
		c.s.launchFailed(c.ctx, wt, madeWt)
		return tools.NodeInfo{}, err
	}
	if wt != nil {
		c.s.attachWorktree(wt, info.Terminal)
	}
	if m, ok := c.s.eng.terminals.Meta(info.Terminal); ok {
		c.s.loadToken(m)
	}
	if spec.Name != "" && info.Terminal != spec.Name {
		// The name was taken: say so, or the caller's next call by that
		// name reaches the other node (CONTRACT §10 naming).
		for _, r := range c.s.eng.terminals.Peek() {
			if r.Terminal != info.Terminal && (r.Terminal == spec.Name || r.Name == spec.Name) {
				info.NameTaken = append(info.NameTaken, r.Terminal)
			}
		}
	}
	return info, nil
}

func terminalLaunch(c *call, spec orchestrator.LaunchSpec) (tools.NodeInfo, any, error) {
	info, err := c.launchFor(spec)
	if err != nil {
		return info, nil, err
	}
	return info, c.stateOf(info.Terminal), nil
}

func terminalList(c *call, _ noArgs) (tools.NodeList, error) {
	all := c.s.eng.terminals.List(c.ctx)
	c.s.agents.Describe(all)
	c.s.annotateNodes(c.ctx, all)              // agents' states (agentstate.go)
	c.s.annotateWorktrees(all)                 // worktrees, from a cache (worktree.go)
	return tools.NodeList{Terminals: all}, nil // kept to the caller's realm by reader (keepToRealm)
}

type snapshotArgs struct {
	terminalArg
	ScrollbackLines int    `json:"scrollback_lines"`
	Screenshot      bool   `json:"screenshot"`
	Scale           int    `json:"screenshot_scale"`
	Theme           string `json:"screenshot_theme"`
}

func terminalSnapshot(c *call, a snapshotArgs) (tools.Snapshot, error) {
	o := c.s.eng.terminals
	snap, err := o.Snapshot(c.ctx, a.Terminal)
	if err != nil {
		return snap, err
	}
	if a.ScrollbackLines > 0 {
		from, to := -a.ScrollbackLines, -1
		sb, err := o.Scrollback(c.ctx, a.Terminal, &from, &to, "")
		if err != nil {
			return tools.Snapshot{}, err
		}
		lines := make([]string, 0, len(sb.Lines))
		for _, l := range sb.Lines {
			lines = append(lines, l.Text)
		}
		snap.Scrollback = &lines
	}
	if a.Screenshot {
		img, facts, err := o.Screenshot(c.ctx, a.Terminal, a.Scale, a.Theme)
		if err != nil {
			return tools.Snapshot{}, err
		}
		snap.Image = base64.StdEncoding.EncodeToString(img)
		snap.Screenshot = &facts
	}
	return snap, nil
}

type readArgs struct {
	terminalArg
	MaxChars int `json:"max_chars"`
}

func terminalRead(c *call, a readArgs) (tools.ReadResult, error) {
	return c.s.eng.terminals.Read(c.ctx, a.Terminal, a.MaxChars)
}

type captureArgs struct {
	terminalArg
	Cursor uint64 `json:"cursor"`
}

func terminalCaptureSince(c *call, a captureArgs) (tools.Changes, error) {
	return c.s.eng.terminals.CaptureSince(c.ctx, a.Terminal, a.Cursor)
}

type waitArgs struct {
	terminalArg
	tools.WaitSpec
}

func terminalWaitFor(c *call, a waitArgs) (tools.WaitResult, error) {
	if a.Wait == tools.WaitSemantic {
		return c.s.eng.terminals.WaitSemantic(c.ctx, a.Terminal, a.WaitSpec)
	}
	return c.s.eng.terminals.WaitFor(c.ctx, a.Terminal, a.WaitSpec)
}

type scrollbackArgs struct {
	terminalArg
	From   *int   `json:"from"`
	To     *int   `json:"to"`
	Search string `json:"search"`
}

func terminalScrollback(c *call, a scrollbackArgs) (tools.ScrollbackResult, error) {
	return c.s.eng.terminals.Scrollback(c.ctx, a.Terminal, a.From, a.To, a.Search)
}

// inputArgs are the arguments of the input operations.
type inputArgs struct {
	terminalArg
	Text string          `json:"text"`
	Keys string          `json:"keys"`
	Wait *tools.WaitSpec `json:"wait"`
}

// inputOp wraps an input operation: its receipt's state is the terminal's
// snapshot after the input (and the wait, if any).
func inputOp(send func(c *call, a inputArgs) (tools.InputResult, error)) func(c *call, a inputArgs) (tools.InputResult, any, error) {
	return func(c *call, a inputArgs) (tools.InputResult, any, error) {
		r, err := send(c, a)
		if err != nil {
			return r, nil, err
		}
		return r, c.stateOf(a.Terminal), nil
	}
}

type resizeArgs struct {
	terminalArg
	Columns int `json:"columns"`
	Rows    int `json:"rows"`
}

func terminalResize(c *call, a resizeArgs) (tools.ResizeResult, any, error) {
	snap, err := c.s.eng.terminals.Resize(c.ctx, a.Terminal, a.Columns, a.Rows)
	if err != nil {
		return tools.ResizeResult{}, nil, err
	}
	return tools.ResizeResult{Terminal: a.Terminal, Columns: snap.Columns, Rows: snap.Rows, Revision: snap.Revision}, snap, nil
}

type signalArgs struct {
	terminalArg
	Signal string `json:"signal"`
}

func terminalSignal(c *call, a signalArgs) (tools.SignalResult, any, error) {
	r, err := c.s.eng.terminals.Signal(a.Terminal, a.Signal)
	if err != nil {
		return r, nil, err
	}
	return r, c.stateOf(a.Terminal), nil
}

func terminalClose(c *call, a terminalArg) (tools.CloseResult, any, error) {
	if m, ok := c.s.eng.terminals.Meta(a.Terminal); ok {
		c.s.dialogs.EndOpen(m.Incarnation()) // before its program ends
	}
	if err := c.s.eng.terminals.CloseNode(c.ctx, a.Terminal); err != nil {
		return tools.CloseResult{}, nil, err
	}
	return tools.CloseResult{Terminal: a.Terminal, Closed: true}, tools.ClosedState{Terminal: a.Terminal, Status: "closed"}, nil
}

func terminalExternal(c *call, a terminalArg) (tools.ExternalResult, any, error) {
	r, err := c.s.eng.terminals.External(a.Terminal)
	if err != nil {
		return r, nil, err
	}
	return r, c.stateOf(a.Terminal), nil
}

func terminalFocus(c *call, a terminalArg) (tools.FocusResult, any, error) {
	r, err := c.s.eng.terminals.Focus(c.ctx, a.Terminal)
	if err != nil {
		return r, nil, err
	}
	return r, c.stateOf(a.Terminal), nil
}
