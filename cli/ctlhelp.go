package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

// `termsprawlctl call OP --help` (CONTRACT §18) prints that operation's
// arguments and an example from the table (tools.OperationUsage), exit 0;
// `call --help` without OP stays kong's (every operation, one line each).

// ctlValueFlags are termsprawlctl's global flags that take a value.
var ctlValueFlags = map[string]bool{"--session": true, "--wait": true, "--retry": true}

// callOpHelp recognises `call OP … --help` (or -h) anywhere after call;
// ok is false for anything else.
func callOpHelp(args []string) (op string, ok bool) {
	if os.Getenv("COMP_LINE") != "" {
		return "", false
	}
	var pos []string
	help := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return "", false
		case a == "--help" || a == "-h":
			if len(pos) >= 1 && pos[0] == "call" {
				help = true
			}
		case strings.HasPrefix(a, "-"):
			if ctlValueFlags[a] {
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	if !help || len(pos) < 2 || pos[0] != "call" {
		return "", false
	}
	return pos[1], true
}

// printCallOpHelp prints OP's help, or for an unknown OP the usage error
// suggesting the nearest operation.
func printCallOpHelp(opName string, stdout, stderr io.Writer) int {
	op, ok := tools.Lookup(opName)
	if !ok {
		return usageError(stderr, ctlName, tools.UnknownOperationError(opName), "(termsprawlctl call --help lists the operations)")
	}
	fmt.Fprint(stdout, tools.OperationUsage(op))
	return ExitOK
}
