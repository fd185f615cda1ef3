package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// Fleet tools (CONTRACT §30): termsprawl grep and termsprawl fork.

// fleetCmds are embedded in the human grammar.
type fleetCmds struct {
	Grep grepCmd `cmd:"" help:"Search every node's screen and whole history (and with --recordings the recordings) for a text; prints NODE:LINE:TEXT."`
	Fork forkCmd `cmd:"" help:"Start a new agent that continues an agent node's conversation as a branch of it (in the same directory, or --worktree a new one with its uncommitted changes)."`
}

type grepCmd struct {
	JSON       bool     `name:"json" help:"Print the search's whole answer as JSON."`
	IgnoreCase bool     `name:"ignore-case" short:"i" help:"Letters match in either case."`
	Regex      bool     `name:"regex" short:"E" help:"PATTERN is a Go regular expression (default: the text itself)."`
	Recordings bool     `name:"recordings" help:"Also search the recordings in <state>/traces (each line with the time it was recorded)."`
	Since      string   `name:"since" placeholder:"D" help:"Only recorded lines of the last D (90m, 2h) or since an RFC 3339 time; live history has no times and is searched whole."`
	Limit      int      `name:"limit" placeholder:"N" help:"Print at most N matches (default 200)."`
	Pattern    string   `arg:"" name:"PATTERN" help:"The text to find (with -E a Go regular expression)."`
	Node       []string `arg:"" optional:"" name:"NODE" predictor:"node" help:"Only these nodes (default: every node)."`
}

func (grepCmd) Examples() string {
	return `termsprawl grep 'connection refused'        # which node printed it, and where
termsprawl grep -i panic build web           # two nodes, either case
termsprawl grep -E 'FAIL(ED)?:' --recordings  # also the recordings, each line with its time
termsprawl grep TODO --recordings --since 2h  # recorded in the last two hours`
}

func (h *human) grep(c grepCmd) int {
	if c.Regex {
		if _, err := regexp.Compile(c.Pattern); err != nil {
			return usageError(h.stderr, h.prefix(), fmt.Errorf("%q is not a Go regular expression: %v (leave out -E to search for the text itself)", c.Pattern, err), "")
		}
	}
	if c.Since != "" {
		if _, err := tools.ParseSince(c.Since, time.Now()); err != nil {
			return usageError(h.stderr, h.prefix(), fmt.Errorf("--%v", err), "")
		}
	}
	if c.Limit < 0 || c.Limit > tools.MaxSearchLimit {
		return usageError(h.stderr, h.prefix(), fmt.Errorf("--limit %d is out of range: 1 to %d", c.Limit, tools.MaxSearchLimit), "")
	}
	args := map[string]any{"pattern": c.Pattern}
	if c.IgnoreCase {
		args["ignore_case"] = true
	}
	if c.Regex {
		args["regex"] = true
	}
	if c.Recordings {
		args["recordings"] = true
	}
	if c.Since != "" {
		args["since"] = c.Since
	}
	if c.Limit > 0 {
		args["limit"] = c.Limit
	}
	if len(c.Node) > 0 {
		args["nodes"] = c.Node
	}
	v, code := h.call("fleet_search", args)
	if code != ExitOK {
		return code
	}
	var r tools.FleetSearchResult
	if err := tools.DecodeValue(v, &r); err != nil {
		fmt.Fprintf(h.stderr, "%s: %v\n", h.prefix(), err)
		return ExitNo
	}
	if c.JSON {
		_ = prettyJSON(h.stdout, json.RawMessage(v))
	} else {
		for _, m := range r.Matches {
			fmt.Fprintln(h.stdout, grepLine(m))
		}
		for _, s := range r.Skipped {
			what := "node " + tools.VisibleLine(s.Node)
			if s.Recording != "" {
				what = "recording " + tools.VisibleLine(s.Recording)
			}
			fmt.Fprintf(h.stderr, "%s: could not read %s: %s\n", h.prefix(), what, tools.VisibleLine(humanize(s.Reason)))
		}
		if r.Truncated {
			fmt.Fprintf(h.stderr, "%s: showing the first %d matches; more were cut (narrow PATTERN, name NODEs, or raise --limit)\n", h.prefix(), len(r.Matches))
		}
	}
	if len(r.Matches) == 0 {
		if !c.JSON {
			where := fmt.Sprintf("%d nodes", r.Nodes)
			if r.Nodes == 1 {
				where = "1 node"
			}
			if c.Recordings {
				where += fmt.Sprintf(" and %d recordings", r.Recordings)
			}
			fmt.Fprintf(h.stderr, "%s: no line matches %q in %s\n", h.prefix(), tools.VisibleLine(c.Pattern), where)
		}
		return ExitNo // as grep: 1 when nothing matched
	}
	return ExitOK
}

// grepLine is one match: NODE:LINE:TEXT, a recording's as
// NODE@TIME:LINE:TEXT; every outside word made visible.
func grepLine(m tools.FleetMatch) string {
	node := tools.VisibleLine(cmp.Or(m.Name, m.Node))
	if m.Source == tools.MatchRecording {
		at := m.Time
		if t, err := time.Parse(time.RFC3339Nano, m.Time); err == nil {
			at = t.Local().Format("2006-01-02 15:04:05")
		}
		node += "@" + tools.VisibleLine(at)
	}
	return fmt.Sprintf("%s:%d:%s", node, m.Line, tools.VisibleLine(m.Text))
}

type forkCmd struct {
	JSON bool   `name:"json" help:"Print the whole receipt as JSON."`
	Name string `name:"name" placeholder:"N" help:"The new node's name (default: the node's name and -fork)."`
	// Worktree: --worktree [NAME] (worktreeArgs makes a bare --worktree
	// --worktree-auto).
	Worktree     string `name:"worktree" placeholder:"NAME" help:"Start it in a new git worktree branched from the node's HEAD, with the node's uncommitted changes copied (the node's own files are not touched): branch termsprawl/NAME (NAME may be left out)."`
	WorktreeAuto bool   `name:"worktree-auto" hidden:"" help:"--worktree without a NAME."`
	nodeArg
}

func (forkCmd) Examples() string {
	return `termsprawl fork review                     # a second claude continuing review's conversation, same directory
termsprawl fork review --name try-b        # named try-b
termsprawl fork review --worktree          # in a new worktree with review's uncommitted changes
termsprawl fork review --worktree try-b    # on branch termsprawl/try-b`
}

func (h *human) fork(c forkCmd) int {
	args := map[string]any{"node": c.Node}
	if c.Name != "" {
		args["name"] = c.Name
	}
	if c.Worktree != "" || c.WorktreeAuto {
		w := map[string]any{}
		if c.Worktree != "" {
			w["branch"] = c.Worktree
		}
		args["worktree"] = w
	}
	return mutate(h, "agent_fork", args, c.JSON, func(r tools.ForkResult) {
		if r.Terminal == "" {
			fmt.Fprintf(h.stdout, "forked node %s\n", c.Node)
			return
		}
		s := fmt.Sprintf("forked node %s into %s (%s, conversation %s) in %s", tools.VisibleLine(r.From), tools.VisibleLine(r.Terminal), r.Agent, tools.VisibleLine(r.Conversation), tools.VisibleLine(r.Cwd))
		if r.Copied > 0 {
			s += fmt.Sprintf(", %d uncommitted files copied", r.Copied)
		}
		fmt.Fprintln(h.stdout, s)
	})
}

// runFleetCmd runs grep and fork; ok is false for other commands.
func (h *human) runFleetCmd(cmd string, g *humanGrammar) (int, bool) {
	switch cmd {
	case "grep":
		return h.grep(g.Grep), true
	case "fork":
		return h.fork(g.Fork), true
	}
	return 0, false
}
