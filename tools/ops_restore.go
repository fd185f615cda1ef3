package tools

// restoreOperations are the rows of surviving a reboot (CONTRACT §25).
func restoreOperations() []*Operation {
	return []*Operation{
		{Name: "terminal_restore", Result: RestoreResult{}, State: Snapshot{}, Topic: TopicTerminal, Mutation: true, Annotations: annInput,
			Description: "Operator only: start a lost terminal (status lost: its tmux server went away, at a reboot or while termsprawl ran) again with the same id, name, directory and recording, and a new token; an agent resumes its conversation where it has one (resumed says which, fresh_start why not).",
			Params: []Param{paramTerminal,
				{Name: "cwd", Type: TypeString, NonEmpty: true, MaxLen: 4096, Description: "Start it in this absolute directory instead of its own (when that one is gone)."},
			}},
		{Name: "terminal_forget", Result: ForgetResult{}, State: ClosedState{}, Topic: TopicTerminal, Mutation: true, Annotations: Annotations{Destructive: true, Idempotent: true},
			Description: "Operator only: drop a lost terminal (or one that had exited before its tmux server went) and its last screen; a terminal that runs is refused (terminal_close ends it).",
			Params:      []Param{paramTerminal}},
	}
}
