// Package ctllite is termsprawlctl's hot path in a binary that links only
// the standard library: `call OP [JSON_ARGS]`, `doctor` and the state
// hooks (`hook claude|gemini|codex EVENT`), which agents run on every
// turn. It reads the session and endpoint files, makes one hand-written
// HTTP/1.1 request on a loopback socket and prints the reply exactly as
// the full CLI (package cli, kong) would.
//
// Anything else, and anything the hot path cannot answer the same way
// without the operation table (an argument error, no orchestrator
// answering, --retry, a permission hook), is handed to the full CLI: the
// `termsprawl` binary found next to termsprawlctl (else on $PATH) is
// executed as `termsprawl __termsprawlctl ARGS…` (FullCommand), which runs
// cli.MainCtl. Only failures where nothing reached the orchestrator, or
// where it did nothing (kind usage), are handed over, so nothing is ever
// sent twice. See docs/PERFORMANCE.md "termsprawlctl as fast as tmux".
package ctllite

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// FullCommand is the hidden first argument of the termsprawl binary that
// runs the full termsprawlctl (cli.MainCtl) on the remaining arguments.
const FullCommand = "__termsprawlctl"

// Invocation is a recognised hot invocation.
type Invocation struct {
	Session string
	Wait    time.Duration
	Retry   int
	Mode    string // "call", "doctor" or "hook"
	Op      string // call
	Args    string // call: JSON_ARGS as given ("" when absent)
	// hook
	Agent, Event, Payload string
}

// Parse recognises `[--session P] [--wait D] [--retry N] call OP
// [JSON_ARGS]`, `doctor` and `hook KIND EVENT [PAYLOAD]` with the flags
// anywhere (as kong accepts them) and nothing else: help, other flags, a
// missing or extra argument, a bad flag value and shell completion are
// the full CLI's (ok false).
func Parse(args []string) (inv Invocation, ok bool) {
	if os.Getenv("COMP_LINE") != "" {
		return inv, false
	}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		switch name {
		case "--session", "--wait", "--retry":
		default:
			return inv, false
		}
		if !hasVal {
			if i+1 >= len(args) {
				return inv, false
			}
			i++
			val = args[i]
		}
		switch name {
		case "--session":
			inv.Session = val
		case "--wait":
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 {
				return inv, false
			}
			inv.Wait = d
		case "--retry":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return inv, false
			}
			inv.Retry = n
		}
	}
	switch {
	case len(pos) == 1 && pos[0] == "doctor":
		inv.Mode = "doctor"
	case len(pos) >= 2 && len(pos) <= 3 && pos[0] == "call" && pos[1] != "":
		inv.Mode, inv.Op = "call", pos[1]
		if len(pos) == 3 {
			inv.Args = pos[2]
		}
	case len(pos) >= 3 && len(pos) <= 4 && pos[0] == "hook" &&
		(pos[1] == "claude" || pos[1] == "codex" || pos[1] == "gemini" || pos[1] == "opencode"):
		inv.Mode, inv.Agent, inv.Event = "hook", pos[1], pos[2]
		if len(pos) == 4 {
			inv.Payload = pos[3]
		}
	default:
		return inv, false
	}
	return inv, true
}
