package tools

// RestoreResult is terminal_restore's result (CONTRACT §25).
type RestoreResult struct {
	NodeInfo
	// Cwd is the directory it runs in.
	Cwd string `json:"cwd"`
	// Resumed is the agent's conversation id it resumed ("" when none).
	Resumed string `json:"resumed,omitempty"`
	// FreshStart says why an agent started without its conversation.
	FreshStart string `json:"fresh_start,omitempty"`
}

// ForgetResult is terminal_forget's result.
type ForgetResult struct {
	Terminal  string `json:"terminal"`
	Forgotten bool   `json:"forgotten"`
}
