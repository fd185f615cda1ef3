package tools

// The worktree argument of terminal_launch and agent_launch (CONTRACT §21).
var paramWorktree = Param{Name: "worktree", Type: TypeStruct,
	Description: "Start the node in a new git worktree of the repository holding cwd: <repo's parent>/<repo>.worktrees/NAME on branch termsprawl/NAME from base. .worktreeinclude's ignored files are copied in; .termsprawl/worktree.json {\"setup\": [argv…]} runs there first (output in the node). Give {} for the defaults.",
	Fields: []Param{
		{Name: "branch", Type: TypeString, NonEmpty: true, MaxLen: 100, Description: "NAME: the branch is termsprawl/NAME and the path ends in NAME (default: the node's name and a time stamp)."},
		{Name: "base", Type: TypeString, NonEmpty: true, MaxLen: 256, Description: "Branch, tag or commit to start from (default: the main worktree's HEAD)."},
		{Name: "submodules", Type: TypeBoolean, Description: "true: initialize submodules in the new worktree (default: not)."},
	}}
