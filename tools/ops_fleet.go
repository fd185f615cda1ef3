package tools

import (
	"encoding/json"
	"fmt"
	"regexp"
	"time"
)

// Fleet tools (CONTRACT §30): a search over every node's screen and
// history (and recordings), and a fork of an agent's conversation.

const (
	// DefaultSearchLimit is fleet_search's default limit.
	DefaultSearchLimit = 200
	// MaxSearchLimit is fleet_search's largest limit.
	MaxSearchLimit = 10000
	// MaxSearchPattern caps fleet_search's pattern in bytes.
	MaxSearchPattern = 1024
)

// fleetOperations are the rows of fleet search and fork.
func fleetOperations() []*Operation {
	return []*Operation{
		{Name: "fleet_search", Result: FleetSearchResult{}, Topic: TopicTerminal, Annotations: annRead,
			Description: "Search every node's screen and whole tmux history (and, with recordings: true, the recordings) for a text or a Go regular expression; each match with node, line (terminal_scrollback's numbering: 0 is the screen's first row, negative lines are history), time where known (recordings), and its line of text. At most limit matches (default 200); truncated says when cut. An agent searches only the nodes it may read.",
			Params: []Param{
				{Name: "pattern", Type: TypeString, Required: true, NonEmpty: true, MaxLen: MaxSearchPattern, Description: "What to find: a literal text, or with regex: true a Go RE2 regular expression."},
				{Name: "regex", Type: TypeBoolean, Description: "true: pattern is a Go RE2 regular expression (default: a literal text)."},
				{Name: "ignore_case", Type: TypeBoolean, Description: "true: letters match in either case."},
				{Name: "nodes", Type: TypeStringArray, NonEmpty: true, MaxLen: MaxNameBytes, MaxItems: 1024, Description: "Only these nodes (each an id, else a name when unique, else a unique id prefix); default: every node."},
				{Name: "recordings", Type: TypeBoolean, Description: "true: also search the recordings in <state>/traces (their output as text, each line with its time)."},
				{Name: "since", Type: TypeString, NonEmpty: true, MaxLen: 64, Description: "Only recorded lines at or after this moment: a duration back from now (90m, 2h) or an RFC 3339 time. Live history carries no times and is searched whole."},
				intParam("limit", fmt.Sprintf("Most matches returned (1 to %d, default %d).", MaxSearchLimit, DefaultSearchLimit), intPtr(1), intPtr(MaxSearchLimit)),
			},
			check: checkFleetSearch},
		{Name: "agent_fork", Result: ForkResult{}, State: Snapshot{}, Topic: TopicAgents, Mutation: true, Annotations: Annotations{OpenWorld: true},
			Description: "Start a new agent of the same kind that continues an agent node's conversation as a branch of it (Claude Code --resume ID --fork-session, Codex `codex fork ID`, OpenCode --session ID --fork; a kind without a fork form, a shell node, or an agent that reported no conversation id is refused with the reason), in the node's directory or, with worktree, in a new git worktree branched from the node's HEAD with its uncommitted changes copied (the node's own worktree is left untouched).",
			Params: []Param{
				{Name: "node", Type: TypeString, Required: true, NonEmpty: true, MaxLen: MaxNameBytes, Description: "The agent node to fork: its id, else its name when unique, else a unique id prefix."},
				paramName,
				{Name: "worktree", Type: TypeStruct, Description: "Start the fork in a new git worktree branched from the node's HEAD, with the node's uncommitted changes (tracked modifications and untracked files git does not ignore) copied in. Give {} for the defaults.",
					Fields: []Param{
						{Name: "branch", Type: TypeString, NonEmpty: true, MaxLen: 100, Description: "NAME: the branch is termsprawl/NAME and the path ends in NAME (default: the fork's name and a time stamp)."},
					}},
			}},
	}
}

// checkFleetSearch refuses a bad regular expression or since before
// anything is read.
func checkFleetSearch(op *Operation, fields map[string]json.RawMessage) error {
	var regex bool
	if raw, ok := fields["regex"]; ok {
		_ = json.Unmarshal(raw, &regex)
	}
	if regex {
		var p string
		if err := json.Unmarshal(fields["pattern"], &p); err == nil {
			if _, err := regexp.Compile(p); err != nil {
				return op.usageErr("pattern", "pattern is not a Go regular expression: %v (pass regex: false to search for the text itself)", err)
			}
		}
	}
	if raw, ok := fields["since"]; ok {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			if _, err := ParseSince(s, time.Now()); err != nil {
				return op.usageErr("since", "%v", err)
			}
		}
	}
	return nil
}

// ParseSince reads a since argument: a duration back from now (90m, 2h,
// 1h30m) or an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("since %q is negative: give how long back from now, e.g. 2h", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("since %q is neither a duration (90m, 2h) nor an RFC 3339 time (2026-01-02T15:04:05Z)", s)
}
