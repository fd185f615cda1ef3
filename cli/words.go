package cli

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

// resolveNode names a node the way every terminal argument does
// (CONTRACT §10), applied to terminal_list's rows: an exact id, else an
// exact name when unique, else a unique id prefix. attach needs the id
// itself (tmux attaches to ts-<id>); open uses it to say which node it
// opened.
func resolveNode(rows []tools.NodeInfo, word string) (tools.NodeInfo, error) {
	for _, r := range rows {
		if r.Terminal == word {
			return r, nil
		}
	}
	var byName, byPrefix []tools.NodeInfo
	for _, r := range rows {
		if r.Name == word {
			byName = append(byName, r)
		}
		if strings.HasPrefix(r.Terminal, word) {
			byPrefix = append(byPrefix, r)
		}
	}
	for _, c := range [][]tools.NodeInfo{byName, byPrefix} {
		switch {
		case len(c) == 1:
			return c[0], nil
		case len(c) > 1:
			ids := make([]string, len(c))
			for i, r := range c {
				ids[i] = r.Terminal
			}
			sort.Strings(ids)
			return tools.NodeInfo{}, &ambiguousNodeError{fmt.Sprintf("%q names %d nodes (%s): use one of their ids", word, len(ids), strings.Join(ids, ", "))}
		}
	}
	var known []string
	for _, r := range rows {
		known = append(known, r.Terminal, r.Name)
	}
	return tools.NodeInfo{}, fmt.Errorf("no node %q%s: `termsprawl ls` lists the nodes", word, tools.DidYouMean(tools.Suggest(word, known, false)))
}

// humanTerms rewrites the agent-facing wording of an error (operation
// names, "call X") into the human CLI's commands.
var humanTerms = strings.NewReplacer(
	"call terminal_list to see the terminals", "`termsprawl ls` lists the nodes",
	"call agent_status to see the agents", "`termsprawl ls` lists the nodes",
	"close terminals with terminal_close first", "close some with `termsprawl kill NODE` first",
	"call terminal_snapshot and continue from its revision", "see `termsprawl snapshot NODE`",
	"call terminal_snapshot", "see `termsprawl snapshot NODE`",
	"call dialog_list", "`termsprawl dialogs` lists them",
	"give selection, one of", "pick one with --choice VALUE, one of",
	"(see terminal_list)", "(see `termsprawl ls`)",
	"see terminal_list", "see `termsprawl ls`",
	// An API message that names the human command beside the operation
	// says it once in the CLI.
	"terminal_close (termsprawl kill)", "`termsprawl kill`",
	"(see agent_status)", "(`termsprawl ls` lists them)",
	"(worktree {} on terminal_launch / agent_launch)", "(termsprawl new|agent --worktree NAME)",
	"see agent_status", "`termsprawl ls` lists them",
	"no terminal emulator", "no terminal emulator", // a program, not a node
	"no terminal ", "no node ",
	"terminal \"", "node \"",
	"give its absolute path as command[0]", "give its absolute path as the command",
	" terminals (", " nodes (",
	"terminal_list", "`termsprawl ls`",
	"terminal_close", "`termsprawl kill`",
	"terminal_snapshot", "`termsprawl snapshot`",
	"terminal_launch", "`termsprawl new`",
	"agent_launch", "`termsprawl agent`",
	"terminal_submit", "`termsprawl send`",
	"terminal_external", "`termsprawl open`",
	"dialog_list", "`termsprawl dialogs`",
	"dialog_answer", "`termsprawl answer`",
	"session_info", "`termsprawl doctor`",
)

// flagArgument is a table argument named in an error ("argument
// \"sandbox\"") that is a flag of the same name on new and agent.
var flagArgument = regexp.MustCompile(`argument "(sandbox|name|cwd|host|policy|env)"`)

// leadingCommand is an error's own "`termsprawl new`: " in front: the CLI
// prefixes every message with its command already.
var leadingCommand = regexp.MustCompile("^`termsprawl [a-z]+`: ")

// humanize phrases a tool error in the human CLI's own terms.
func humanize(msg string) string {
	msg = humanTerms.Replace(msg)
	msg = flagArgument.ReplaceAllString(msg, "--$1")
	return leadingCommand.ReplaceAllString(msg, "")
}
