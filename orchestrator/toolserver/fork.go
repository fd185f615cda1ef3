package toolserver

import "github.com/termsprawl/termsprawl/tools"

type agentForkArgs struct {
	nodeArg
	Name     string               `json:"name"`
	Worktree *tools.WorktreeLaunch `json:"worktree"`
}

func agentFork(c *call, a agentForkArgs) (tools.ForkResult, any, error) {
	return tools.ForkResult{}, nil, tools.Errorf(tools.KindInternal, "not yet")
}
