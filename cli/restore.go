package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

// Surviving a reboot (CONTRACT §25): termsprawl restore and forget.

// rebootCmds are embedded in the human grammar.
type rebootCmds struct {
	Restore restoreCmd `cmd:"" help:"Start a lost node (its tmux server was gone: a reboot) again: same id, name, directory and recording; an agent resumes its conversation."`
	Forget  forgetCmd  `cmd:"" help:"Drop a lost node (or one that had exited before its tmux server went) and its last screen."`
}

type restoreCmd struct {
	jsonFlag
	All  bool     `name:"all" help:"Restore every lost node."`
	Cwd  string   `name:"cwd" placeholder:"DIR" predictor:"dir" help:"Start it in this directory instead of its own (when that one is gone)."`
	Node []string `arg:"" optional:"" name:"NODE" predictor:"node" help:"Lost node(s): id, else name when unique, else a unique id prefix."`
}

func (restoreCmd) Examples() string {
	return `termsprawl ls                              # lost nodes have status lost
termsprawl snapshot build                  # the last screen of lost node build, and when it was saved
termsprawl restore build                   # start it again (an agent resumes its conversation)
termsprawl restore --all                   # every lost node
termsprawl restore build --cwd ~/src/new   # its directory is gone: start it in another`
}

type forgetCmd struct {
	jsonFlag
	nodeArg
}

func (forgetCmd) Examples() string {
	return "termsprawl forget build                    # drop lost node build"
}

// runRebootCmd runs restore and forget; ok is false for other commands.
func (h *human) runRebootCmd(cmd string, g *humanGrammar) (int, bool) {
	switch cmd {
	case "restore":
		return h.restore(g.Restore), true
	case "forget":
		return mutate(h, "terminal_forget", map[string]any{"terminal": g.Forget.Node}, g.Forget.JSON, func(r tools.ForgetResult) {
			fmt.Fprintf(h.stdout, "forgot node %s\n", cmp.Or(r.Terminal, g.Forget.Node))
		}), true
	}
	return 0, false
}

func (h *human) restore(c restoreCmd) int {
	switch {
	case c.All && len(c.Node) > 0:
		return usageError(h.stderr, h.prefix(), errors.New("give NODE or --all, not both"), "")
	case !c.All && len(c.Node) == 0:
		return usageError(h.stderr, h.prefix(), errors.New("name the lost node to restore, or --all (termsprawl ls shows status lost)"), "")
	case c.All && c.Cwd != "":
		return usageError(h.stderr, h.prefix(), errors.New("--cwd is for one node: restore it by name"), "")
	}
	cwd := c.Cwd
	if cwd != "" && !filepath.IsAbs(cwd) {
		wd, err := os.Getwd()
		if err != nil {
			return usageError(h.stderr, h.prefix(), fmt.Errorf("--cwd %s is relative and the current directory is unknown: %w", cwd, err), "")
		}
		cwd = filepath.Join(wd, cwd)
	}
	nodes := c.Node
	if c.All {
		v, code := h.call("terminal_list", map[string]any{})
		if code != ExitOK {
			return code
		}
		var l tools.NodeList
		if err := tools.DecodeValue(v, &l); err != nil {
			fmt.Fprintf(h.stderr, "%s: %v\n", h.prefix(), err)
			return ExitNo
		}
		for _, n := range l.Terminals {
			if n.Status == tools.StatusLost {
				nodes = append(nodes, n.Terminal)
			}
		}
		if len(nodes) == 0 {
			fmt.Fprintln(h.stdout, "no lost nodes: nothing to restore")
			return ExitOK
		}
	}
	worst := ExitOK
	for _, node := range nodes {
		args := map[string]any{"terminal": node}
		if cwd != "" {
			args["cwd"] = cwd
		}
		code := h.simple("terminal_restore", args, func(v json.RawMessage) {
			if c.JSON {
				printReceipt(h.stdout, v)
				return
			}
			var r tools.ReceiptOf[tools.RestoreResult]
			if err := tools.DecodeValue(v, &r); err != nil {
				fmt.Fprintf(h.stdout, "restored node %s\n", node)
				return
			}
			fmt.Fprintln(h.stdout, tools.VisibleText(restoredLine(r.Result)))
		})
		worst = max(worst, code)
	}
	return worst
}

// restoredLine is one restored node, as a sentence.
func restoredLine(r tools.RestoreResult) string {
	s := fmt.Sprintf("restored node %s in %s", r.Terminal, r.Cwd)
	switch {
	case r.Resumed != "":
		s += fmt.Sprintf(", resuming %s's conversation %s", r.Agent, r.Resumed)
	case r.FreshStart != "":
		s += "; " + r.FreshStart
	}
	if r.Recording != nil {
		s += ", recording into " + r.Recording.Path
	}
	return s
}

// printLost adds to up's banner what --restore restored, what it could
// not, and the nodes still lost.
func printLost(w io.Writer, restored []tools.RestoreResult, errs []error, lost []string) {
	for _, r := range restored {
		fmt.Fprintln(w, tools.VisibleText(restoredLine(r)))
	}
	for _, err := range errs {
		fmt.Fprintf(w, "not restored: %v\n", err)
	}
	if len(lost) > 0 {
		fmt.Fprintf(w, "lost (their tmux server was gone): %s — termsprawl restore --all starts them again\n", tools.VisibleLine(strings.Join(lost, ", ")))
	}
}

// forgetLaunches removes the kept launches of every node (`down --all`
// ended them all): the next `up` forgets their nodes instead of listing
// them lost. termsprawl is stopped: nobody else writes there.
func forgetLaunches(stateDir string) {
	files, _ := filepath.Glob(filepath.Join(stateDir, nodesDir, "*.launch.json"))
	for _, f := range files {
		os.Remove(f)
	}
}
