package tools

// worktreeOperations are the worktree rows of the table (CONTRACT §21).
func worktreeOperations() []*Operation {
	node := func(desc string) Param {
		return Param{Name: "node", Type: TypeString, Required: true, NonEmpty: true, MaxLen: MaxNameBytes, Description: desc}
	}
	wtNode := node("The node working in the worktree (its id, else its name, else a unique id prefix), or the worktree's NAME or branch once the node is gone.")
	return []*Operation{
		{Name: "worktree_list", Result: WorktreeList{}, Topic: TopicAgents, Annotations: annRead,
			Description: "List the git worktrees termsprawl made: path, branch, base, node, and dirty / ahead / behind / merged (squash-merged counts as unmerged)."},
		{Name: "worktree_diff", Result: WorktreeDiff{}, Topic: TopicAgents, Annotations: annRead,
			Description: "A worktree's diff against its base (committed, uncommitted and new files), bounded and saying when cut; with turn, the diff recorded at that turn's end. A node that is not an agent records a turn at each call.",
			Params: []Param{wtNode,
				intParam("turn", "A recorded turn (1 is the first); default: the diff now.", intPtr(1), nil),
				{Name: "stat", Type: TypeBoolean, Description: "true: stats only (files, insertions, deletions), no diff text."},
			}},
		{Name: "worktree_comment", Result: WorktreeComments{}, State: WorktreeComments{}, Topic: TopicAgents, Mutation: true, Annotations: annWrite,
			Description: "Add a review comment on a line of a worktree's file; worktree_review_send sends the collected comments to the agent as one task.",
			Params: []Param{node("The node working in the worktree."),
				{Name: "file", Type: TypeString, Required: true, NonEmpty: true, MaxLen: 4096, Description: "Path relative to the worktree."},
				required(intParam("line", "Line number in the file's new version (1 is the first).", intPtr(1), nil)),
				{Name: "text", Type: TypeString, Required: true, NonEmpty: true, MaxLen: 8192, Description: "The comment."},
			}},
		{Name: "worktree_review_send", Result: WorktreeReviewSent{}, State: WorktreeComments{}, Topic: TopicAgents, Mutation: true, Annotations: annInput,
			Description: "Send a worktree's review comments to its agent as one task (agent_send), quoting each file:line with its diff hunk; the comments are then cleared.",
			Params:      []Param{node("The agent working in the worktree.")}},
		{Name: "worktree_finish", Result: WorktreeFinished{}, State: WorktreeList{}, Topic: TopicAgents, Mutation: true, Annotations: annDestructive,
			Description: "Finish a worktree: merge (into its base, in the clean main worktree on the base), push (to its upstream or origin) or keep; closes its node. Uncommitted changes are refused unless discard; removed only once merged or pushed; the branch deleted only when merged (git branch -d).",
			Params: []Param{wtNode,
				required(enumParam("mode", "merge, push or keep.", "merge", "push", "keep")),
				{Name: "discard", Type: TypeBoolean, Description: "true: throw away the uncommitted changes (they are named in the result)."},
			}},
		{Name: "worktree_prune", Result: WorktreePruned{}, State: WorktreeList{}, Topic: TopicAgents, Mutation: true, Annotations: annDestructive,
			Description: "Remove the worktrees that are clean and merged and whose node is gone (git worktree remove, git branch -d); every other one is kept with the reason."},
	}
}
