package cli

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/termsprawl/termsprawl/tools"
)

// Worktrees for humans (CONTRACT §21): `--worktree [NAME]` on new and
// agent, `diff`, `review`, `finish` and `worktrees [prune]`.

// worktreeFlags are new's and agent's worktree flags.
type worktreeFlags struct {
	Worktree     string `name:"worktree" placeholder:"NAME" help:"Start it in a new git worktree of the repository holding the directory: <repo>.worktrees/NAME on branch termsprawl/NAME (NAME may be left out before another flag, --, or the end)."`
	WorktreeAuto bool   `name:"worktree-auto" hidden:"" help:"--worktree without a NAME."`
	Base         string `name:"base" placeholder:"REF" help:"With --worktree: the branch, tag or commit to start from (default: the main worktree's HEAD)."`
	Submodules   bool   `name:"submodules" help:"With --worktree: initialize the repository's submodules in the new worktree."`
	TrustSetup   bool   `name:"trust-setup" help:"With --worktree: approve the repository's .termsprawl/ files at their current content first, as termsprawl trust DIR does, so its setup runs (the human's alone: refused inside a node)."`
}

// args is the worktree argument of the launch, or nil.
func (f worktreeFlags) args() (map[string]any, error) {
	if f.Worktree == "" && !f.WorktreeAuto {
		if f.Base != "" || f.Submodules || f.TrustSetup {
			return nil, errors.New("--base, --submodules and --trust-setup go with --worktree")
		}
		return nil, nil
	}
	w := map[string]any{}
	if f.Worktree != "" {
		w["branch"] = f.Worktree
	}
	if f.Base != "" {
		w["base"] = f.Base
	}
	if f.Submodules {
		w["submodules"] = true
	}
	return w, nil
}

// worktreeArgs lets --worktree go without its NAME: a --worktree followed
// by nothing, "--" or another flag becomes --worktree-auto.
func worktreeArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "--worktree" && (i+1 == len(args) || strings.HasPrefix(args[i+1], "-")) {
			out = append(out, "--worktree-auto")
			continue
		}
		out = append(out, a)
	}
	return out
}

type worktreeCmds struct {
	Diff      diffCmd          `cmd:"" help:"Print a worktree node's diff against its base (committed, uncommitted, new files); --turn N as recorded at that turn's end."`
	Review    reviewCmd        `cmd:"" help:"Collect a review comment on FILE:LINE of a worktree node; --send sends them all to its agent as one task."`
	Finish    finishCmd        `cmd:"" help:"Finish a worktree node: --merge into its base, --push to its upstream or origin, or --keep; never loses work."`
	Worktrees worktreesCmd     `cmd:"" help:"List termsprawl's git worktrees (dirty, ahead, behind, merged); prune removes the clean and merged ones."`
	Trust     trustCmd         `cmd:"" help:"Approve a repository's .termsprawl/ files (worktree.json's setup, policy.toml) at their current content; print what was approved, with hashes."`
	Worktree  worktreeGroupCmd `cmd:"" help:"Worktree settings: trust DIR approves a repository's .termsprawl/ files, as termsprawl trust does."`
}

type diffCmd struct {
	Turn int  `name:"turn" placeholder:"N" help:"The diff recorded at the end of turn N (default: the diff now)."`
	Stat bool `name:"stat" help:"Only the stats (files, insertions, deletions) and the recorded turns."`
	JSON bool `name:"json" help:"Print worktree_diff's value as JSON."`
	nodeArg
}

func (diffCmd) Examples() string {
	return `termsprawl diff fixer                      # the worktree's diff now
termsprawl diff fixer --stat               # stats and the turns recorded
termsprawl diff fixer --turn 2             # as it was at the end of turn 2`
}

type reviewCmd struct {
	Send bool     `name:"send" help:"Send the collected comments to the agent as one task."`
	JSON bool     `name:"json" help:"Print the receipt as JSON."`
	Node string   `arg:"" name:"NODE" predictor:"node" help:"The worktree's node."`
	At   string   `arg:"" optional:"" name:"FILE:LINE" help:"The line commented on (path relative to the worktree)."`
	Text []string `arg:"" optional:"" name:"TEXT" help:"The comment."`
}

func (reviewCmd) Examples() string {
	return `termsprawl review fixer src/login.go:42 'this leaks the token'
termsprawl review fixer README.md:3 'typo'
termsprawl review fixer --send             # one task to the agent, quoting each line's hunk`
}

type finishCmd struct {
	Merge   bool   `name:"merge" xor:"mode" help:"Merge the branch into its base in the main worktree (clean and on the base), then remove the worktree and delete the merged branch."`
	Push    bool   `name:"push" xor:"mode" help:"Push the branch to its upstream or origin, then remove the worktree (the branch stays)."`
	Keep    bool   `name:"keep" xor:"mode" help:"Keep the worktree and branch; only close the node."`
	Discard bool   `name:"discard" help:"Throw away the worktree's uncommitted changes (named in the output) instead of refusing."`
	JSON    bool   `name:"json" help:"Print the receipt as JSON."`
	Node    string `arg:"" name:"NODE" predictor:"node" help:"The worktree's node, or the worktree's NAME or branch once the node is gone."`
}

func (finishCmd) Examples() string {
	return `termsprawl finish fixer --merge
termsprawl finish fixer --push
termsprawl finish fixer --keep
termsprawl finish fixer --merge --discard   # throw away what is uncommitted first`
}

type worktreesCmd struct {
	JSON   bool   `name:"json" help:"Print worktree_list's value (or prune's receipt) as JSON."`
	Action string `arg:"" optional:"" name:"ACTION" enum:"prune," default:"" help:"prune: remove the worktrees that are clean and merged and whose node is gone."`
}

func (worktreesCmd) Examples() string {
	return `termsprawl worktrees
termsprawl worktrees --json
termsprawl worktrees prune`
}

func (h *human) runWorktreeCmd(cmd string, g *humanGrammar) (int, bool) {
	switch cmd {
	case "diff":
		return h.diff(g.Diff), true
	case "review":
		return h.review(g.Review), true
	case "finish":
		return h.finish(g.Finish), true
	case "worktrees":
		return h.worktrees(g.Worktrees), true
	case "trust":
		return h.approve(cmp.Or(g.Trust.Dir, g.Worktree.Trust.Dir), h.stdout), true
	}
	return 0, false
}

func (h *human) diff(c diffCmd) int {
	args := map[string]any{"node": c.Node}
	if c.Turn > 0 {
		args["turn"] = c.Turn
	} else if c.Turn < 0 {
		return usageError(h.stderr, h.prefix(), errors.New("--turn counts from 1"), "")
	}
	if c.Stat {
		args["stat"] = true
	}
	d, code := callAs[tools.WorktreeDiff](h, "worktree_diff", args)
	if code != ExitOK {
		return code
	}
	if c.JSON {
		_ = prettyJSON(h.stdout, d)
		return ExitOK
	}
	if c.Stat {
		fmt.Fprintf(h.stdout, "%s (%s): %d files changed, %d insertions(+), %d deletions(-)\n", vis(d.Branch), vis(d.Path), d.Files, d.Insertions, d.Deletions)
		if len(d.Turns) > 0 {
			tw := tabwriter.NewWriter(h.stdout, 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "TURN\tAT\tHEAD\tFILES\t+\t-")
			for _, t := range d.Turns {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\n", t.Turn, vis(t.At), vis(t.Head[:min(len(t.Head), 12)]), t.Files, t.Insertions, t.Deletions)
			}
			_ = tw.Flush()
		}
	} else {
		fmt.Fprint(h.stdout, tools.VisibleText(d.Diff))
	}
	if d.Cut != "" {
		fmt.Fprintf(h.stderr, "%s: %s\n", h.prefix(), tools.VisibleText(d.Cut))
	}
	return ExitOK
}

func (h *human) review(c reviewCmd) int {
	if c.Send {
		if c.At != "" {
			return usageError(h.stderr, h.prefix(), errors.New("--send takes only NODE: it sends the comments collected so far"), "")
		}
		return mutate(h, "worktree_review_send", map[string]any{"node": c.Node}, c.JSON, func(r tools.WorktreeReviewSent) {
			fmt.Fprintf(h.stdout, "sent %d comments to %s as task %s\n", r.Comments, vis(r.Node), vis(r.Task))
		})
	}
	file, lineText, ok := strings.Cut(reverse(c.At), ":")
	line, err := strconv.Atoi(reverse(file))
	if !ok || err != nil || line < 1 || len(c.Text) == 0 {
		return usageError(h.stderr, h.prefix(), fmt.Errorf("give FILE:LINE and the comment's TEXT (got %q)", c.At), "example: termsprawl review fixer src/login.go:42 'this leaks the token'")
	}
	return mutate(h, "worktree_comment", map[string]any{"node": c.Node, "file": reverse(lineText), "line": line, "text": strings.Join(c.Text, " ")}, c.JSON, func(r tools.WorktreeComments) {
		fmt.Fprintf(h.stdout, "%d comments pending for %s (termsprawl review %s --send sends them)\n", len(r.Comments), c.Node, c.Node)
	})
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

func (h *human) finish(c finishCmd) int {
	mode := ""
	switch {
	case c.Merge:
		mode = "merge"
	case c.Push:
		mode = "push"
	case c.Keep:
		mode = "keep"
	default:
		return usageError(h.stderr, h.prefix(), errors.New("say how to finish: --merge, --push or --keep"), "example: termsprawl finish fixer --merge")
	}
	args := map[string]any{"node": c.Node, "mode": mode}
	if c.Discard {
		args["discard"] = true
	}
	return mutate(h, "worktree_finish", args, c.JSON, func(r tools.WorktreeFinished) {
		if len(r.Discarded) > 0 {
			fmt.Fprintf(h.stdout, "discarded: %s\n", vis(strings.Join(r.Discarded, ", ")))
		}
		fmt.Fprintln(h.stdout, tools.VisibleText(r.Message))
	})
}

func (h *human) worktrees(c worktreesCmd) int {
	if c.Action == "prune" {
		return mutate(h, "worktree_prune", map[string]any{}, c.JSON, func(r tools.WorktreePruned) {
			for _, x := range r.Removed {
				fmt.Fprintf(h.stdout, "removed %s (%s)\n", vis(x.Path), vis(x.Message))
			}
			for _, x := range r.Kept {
				fmt.Fprintf(h.stdout, "kept %s: %s\n", vis(x.Path), tools.VisibleText(x.Reason))
			}
			if len(r.Removed)+len(r.Kept) == 0 {
				fmt.Fprintln(h.stdout, "no worktrees")
			}
		})
	}
	l, code := callAs[tools.WorktreeList](h, "worktree_list", map[string]any{})
	if code != ExitOK {
		return code
	}
	if c.JSON {
		_ = prettyJSON(h.stdout, l)
		return ExitOK
	}
	if len(l.Worktrees) == 0 {
		fmt.Fprintln(h.stdout, "no worktrees (termsprawl agent KIND --worktree makes one)")
		return ExitOK
	}
	tw := tabwriter.NewWriter(h.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "BRANCH\tNODE\tDIRTY\tAHEAD\tBEHIND\tMERGED\tPATH")
	for _, w := range l.Worktrees {
		merged := "no"
		switch {
		case w.Merged:
			merged = "yes"
		case w.SquashMerged:
			merged = "squash (unmerged)"
		}
		dirty := "no"
		if w.Dirty {
			dirty = "yes"
		}
		if !w.Exists {
			dirty = "gone"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", vis(w.Branch), dash(w.Node), vis(dirty), w.Ahead, w.Behind, vis(merged), vis(w.Path))
	}
	_ = tw.Flush()
	return ExitOK
}
