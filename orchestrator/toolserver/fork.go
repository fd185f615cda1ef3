package toolserver

import (
	"cmp"
	"fmt"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/agentstate"
	"github.com/termsprawl/termsprawl/tools"
)

// agent_fork (CONTRACT §30): a new agent of the node's kind continuing
// its conversation as a branch of it. The command is the node's kept
// launch (the wiring it was launched with, as a restore takes it) with
// the kind's fork form (forkCommand, beside resumeCommand in restore.go);
// with worktree, a new worktree from the node's HEAD gets its
// uncommitted changes (worktree.CopyChanges reads the node's worktree
// only).

type agentForkArgs struct {
	nodeArg
	Name     string                `json:"name"`
	Worktree *tools.WorktreeLaunch `json:"worktree"`
}

func agentFork(c *call, a agentForkArgs) (tools.ForkResult, any, error) {
	if err := c.mustDrive(a.Node); err != nil {
		return tools.ForkResult{}, nil, err
	}
	meta, rec, err := c.s.eng.lost.NodeLaunch(a.Node)
	if err != nil {
		return tools.ForkResult{}, nil, err
	}
	spec := rec.Launch()
	program := spec.Command
	if w := spec.Worktree; w != nil && w.Wrapped {
		program = w.Program // the program, not its setup's wrapper
	}
	cmd, why := forkCommand(rec.Agent, program, rec.Conversation)
	if cmd == nil {
		return tools.ForkResult{}, nil, tools.Errorf(tools.KindRejected, "cannot fork node %s: %s", a.Node, why).
			WithDetails("kind", cmp.Or(rec.Agent, tools.KindShell))
	}
	if rec.Agent != "" && meta.Host == "" {
		if err := checkAgentProgram(rec.Agent, cmd[0]); err != nil {
			return tools.ForkResult{}, nil, fmt.Errorf("fork %s: %w", a.Node, err)
		}
	}
	name := cmp.Or(a.Name, cmp.Or(meta.Name, a.Node)+"-fork")
	fork := orchestrator.LaunchSpec{Command: cmd, Name: name, Cwd: meta.Cwd, Env: spec.Env, EnvMode: spec.EnvMode,
		Columns: spec.Columns, Rows: spec.Rows, Agent: rec.Agent, ExtraEnv: spec.ExtraEnv, Host: explicitHost(meta.Host),
		// A fork runs under its node's profile (CONTRACT §27).
		Sandbox: cmp.Or(meta.Sandbox, spec.Sandbox)}
	copied := 0
	if a.Worktree != nil {
		if meta.Host != "" {
			return tools.ForkResult{}, nil, tools.Errorf(tools.KindUsage, "worktree is for nodes on this machine, not on host %s: fork %s without worktree", meta.Host, a.Node)
		}
		dir := cmp.Or(c.s.eng.lost.CurrentPath(c.ctx, a.Node), meta.Cwd)
		top, head, err := WorktreeGit.Head(c.ctx, dir)
		if err != nil {
			return tools.ForkResult{}, nil, refusal(fmt.Errorf("fork %s into a worktree: %w", a.Node, err))
		}
		fork.Cwd = top
		fork.Worktree = &tools.WorktreeLaunch{Branch: a.Worktree.Branch, Base: head}
		fork.Host = "" // this machine, as prepareWorktree names it
		wt, err := c.prepareWorktree(&fork)
		fork.Host = tools.LocalHost
		if err != nil {
			return tools.ForkResult{}, nil, err
		}
		if copied, err = WorktreeGit.CopyChanges(c.ctx, top, wt.Path); err != nil {
			c.s.launchFailed(c.ctx, wt, true)
			return tools.ForkResult{}, nil, refusal(fmt.Errorf("fork %s: %w", a.Node, err))
		}
		info, err := c.launchFor(fork)
		if err != nil {
			c.s.launchFailed(c.ctx, wt, true)
			return tools.ForkResult{}, nil, err
		}
		return c.forked(info, a.Node, rec.Conversation, fork.Cwd, copied)
	}
	info, err := c.launchFor(fork)
	if err != nil {
		return tools.ForkResult{}, nil, err
	}
	return c.forked(info, a.Node, rec.Conversation, fork.Cwd, 0)
}

// forked finishes a fork's launch as agent_launch does: the agent's state
// starts from its launch, its exit is watched.
func (c *call) forked(info tools.NodeInfo, from, conversation, cwd string, copied int) (tools.ForkResult, any, error) {
	s := c.s
	if m, ok := s.eng.lost.Meta(info.Terminal); ok {
		s.evidence(info.Terminal, m.Incarnation(), tools.Evidence{Source: tools.SourceProcess, Event: agentstate.ProcLaunched}, "forked from "+from, "")
		s.watchExit(info.Terminal, m.Incarnation())
		cwd = m.Cwd
	}
	return tools.ForkResult{NodeInfo: info, From: from, Conversation: conversation, Cwd: cwd, Copied: copied}, c.stateOf(info.Terminal), nil
}
