package tools

// FleetSearchResult is fleet_search's value (CONTRACT §30).
type FleetSearchResult struct {
	Matches []FleetMatch `json:"matches"`
	// Truncated: there were more matches than limit; the first limit
	// (nodes in creation order, each top to bottom, then recordings
	// newest first) are returned.
	Truncated bool `json:"truncated"`
	Limit     int  `json:"limit"`
	// Nodes and Recordings count what was searched.
	Nodes      int `json:"nodes"`
	Recordings int `json:"recordings,omitempty"`
	// Skipped are the nodes and recordings that could not be read, and why.
	Skipped []SearchSkip `json:"skipped,omitempty"`
}

// Sources of a FleetMatch.
const (
	MatchHistory   = "history"
	MatchScreen    = "screen"
	MatchRecording = "recording"
)

// FleetMatch is one matching line.
type FleetMatch struct {
	Node string `json:"node"`
	Name string `json:"name,omitempty"`
	// Source is history, screen or recording.
	Source string `json:"source"`
	// Line is terminal_scrollback's numbering for a live node (0 is the
	// screen's first row, negative lines are history above it; a wrapped
	// line counts from its first row), the line's number in the
	// recording's text (1 is the first) for a recording.
	Line int `json:"line"`
	// Time is when a recording got the line (RFC 3339, UTC); live history
	// carries no time.
	Time string `json:"time,omitempty"`
	// Recording is the recording's directory.
	Recording string `json:"recording,omitempty"`
	// Text is the matching line, cut to MaxMatchText characters around
	// the match; Cut says it was.
	Text string `json:"text"`
	Cut  bool   `json:"cut,omitempty"`
}

// MaxMatchText bounds FleetMatch.Text in characters.
const MaxMatchText = 240

// SearchSkip is a node or recording fleet_search could not read.
type SearchSkip struct {
	Node      string `json:"node"`
	Recording string `json:"recording,omitempty"`
	Reason    string `json:"reason"`
}

// ForkResult is agent_fork's result: the new node, and what it forked.
type ForkResult struct {
	NodeInfo
	// From is the forked node, Conversation its conversation id.
	From         string `json:"from"`
	Conversation string `json:"conversation"`
	Cwd          string `json:"cwd"`
	// Copied counts the uncommitted files copied into the new worktree.
	Copied int `json:"copied,omitempty"`
}
