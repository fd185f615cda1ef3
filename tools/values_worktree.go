package tools

// Worktrees (CONTRACT §21).

// WorktreeLaunch is the worktree argument of terminal_launch and
// agent_launch. Branch, Base and Submodules are what a caller asks; Name,
// Path, Repo and BaseCommit are filled in once the worktree is made, so a
// persisted launch request carries where the node's worktree is (a
// launch that already has Path reuses that worktree).
type WorktreeLaunch struct {
	Branch     string `json:"branch,omitempty"`
	Base       string `json:"base,omitempty"`
	Submodules bool   `json:"submodules,omitempty"`

	Name       string `json:"name,omitempty"`
	Path       string `json:"path,omitempty"`
	Repo       string `json:"repo,omitempty"`
	BaseCommit string `json:"base_commit,omitempty"`
	// FullBranch is termsprawl/NAME.
	FullBranch string `json:"full_branch,omitempty"`
	// Program is the launch's command before the setup was put in front
	// of it (the launch's command runs the setup first): a launch that
	// reuses the worktree runs Program, not the setup again.
	Program []string `json:"program,omitempty"`
	// Wrapped: the launch's command is the setup wrapper around Program.
	Wrapped bool `json:"wrapped,omitempty"`
}

// WorktreeState is a node's worktree in terminal_list. Dirty, Ahead and
// Behind come from a cache refreshed off the list's path; Checked is when
// (empty: not read yet).
type WorktreeState struct {
	Path    string `json:"path"`
	Branch  string `json:"branch"`
	Base    string `json:"base"`
	Dirty   bool   `json:"dirty"`
	Ahead   int    `json:"ahead"`
	Behind  int    `json:"behind"`
	Checked string `json:"checked,omitempty"`
}

// WorktreeEntry is one worktree termsprawl made (worktree_list).
type WorktreeEntry struct {
	Name   string `json:"name"`
	Repo   string `json:"repo"`
	Path   string `json:"path"`
	Branch string `json:"branch"`
	Base   string `json:"base"`
	// Node is the node working in it ("" once it is gone or forgotten).
	Node       string   `json:"node,omitempty"`
	Exists     bool     `json:"exists"`
	Dirty      bool     `json:"dirty"`
	DirtyFiles []string `json:"dirty_files,omitempty"`
	Ahead      int      `json:"ahead"`
	Behind     int      `json:"behind"`
	Merged     bool     `json:"merged"`
	// SquashMerged: every commit has an equivalent in the base, but the
	// branch is not merged; it counts as unmerged.
	SquashMerged bool   `json:"squash_merged,omitempty"`
	Error        string `json:"error,omitempty"`
}

// WorktreeList is worktree_list's value.
type WorktreeList struct {
	Worktrees []WorktreeEntry `json:"worktrees"`
}

// WorktreeTurn is one recorded turn of a worktree's diff.
type WorktreeTurn struct {
	Turn       int    `json:"turn"`
	At         string `json:"at"`
	Head       string `json:"head"`
	Files      int    `json:"files"`
	Insertions int    `json:"insertions"`
	Deletions  int    `json:"deletions"`
}

// WorktreeDiff is worktree_diff's value.
type WorktreeDiff struct {
	Node   string `json:"node"`
	Path   string `json:"path"`
	Branch string `json:"branch"`
	// Turn is the recorded turn shown (0: the live diff).
	Turn       int    `json:"turn"`
	Head       string `json:"head"`
	From       string `json:"from"`
	Files      int    `json:"files"`
	Insertions int    `json:"insertions"`
	Deletions  int    `json:"deletions"`
	Diff       string `json:"diff,omitempty"`
	// Cut says how the diff was cut ("" when whole).
	Cut   string         `json:"cut,omitempty"`
	Turns []WorktreeTurn `json:"turns"`
	// FileStats are each changed file's counts, as git diff --stat shows
	// them (the live diff only; at most 1,000 files).
	FileStats []WorktreeFileStat `json:"file_stats,omitempty"`
	// Comments are the review comments not sent yet (worktree_comment).
	Comments []WorktreeComment `json:"comments,omitempty"`
}

// WorktreeFileStat is one changed file of a diff; a binary file has no
// line counts.
type WorktreeFileStat struct {
	Path       string `json:"path"`
	Insertions int    `json:"insertions"`
	Deletions  int    `json:"deletions"`
	Binary     bool   `json:"binary,omitempty"`
}

// WorktreeComment is one review comment.
type WorktreeComment struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Text string `json:"text"`
	At   string `json:"at"`
}

// WorktreeComments is worktree_comment's result: the node's pending
// comments.
type WorktreeComments struct {
	Node     string            `json:"node"`
	Comments []WorktreeComment `json:"comments"`
}

// WorktreeReviewSent is worktree_review_send's result.
type WorktreeReviewSent struct {
	Node     string `json:"node"`
	Task     string `json:"task"`
	Comments int    `json:"comments"`
	Text     string `json:"text"`
}

// WorktreeFinished is worktree_finish's result.
type WorktreeFinished struct {
	Node          string   `json:"node,omitempty"`
	Path          string   `json:"path"`
	Branch        string   `json:"branch"`
	Mode          string   `json:"mode"`
	Merged        bool     `json:"merged"`
	Pushed        string   `json:"pushed,omitempty"`
	Removed       bool     `json:"removed"`
	BranchDeleted bool     `json:"branch_deleted"`
	Discarded     []string `json:"discarded,omitempty"`
	Message       string   `json:"message"`
}

// WorktreePruned is worktree_prune's result.
type WorktreePruned struct {
	Removed []WorktreeFinished `json:"removed"`
	Kept    []WorktreeKept     `json:"kept"`
}

// WorktreeKept is a worktree prune left, and why.
type WorktreeKept struct {
	Path   string `json:"path"`
	Branch string `json:"branch"`
	Reason string `json:"reason"`
}
