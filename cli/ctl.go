package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/termsprawl/termsprawl/tools"
)

// MissingSessionMessage is what termsprawlctl prints when it has no
// session file (CONTRACT §5).
const MissingSessionMessage = "Launch this helper from a termsprawl agent, or provide --session /absolute/path/to/session.json"

// SessionEnv names the environment variable holding the session file.
const SessionEnv = "TERMSPRAWL_SESSION_FILE"

const ctlName = "termsprawlctl"

// ctlGrammar is termsprawlctl's command line. Flags on the root are
// accepted before or after the mode.
type ctlGrammar struct {
	Session string           `name:"session" placeholder:"PATH" help:"Session file of the calling node (default: $TERMSPRAWL_SESSION_FILE)."`
	Wait    time.Duration    `name:"wait" placeholder:"DURATION" help:"When termsprawl is down, wait up to this long (e.g. 30s) for it to start, then call."`
	Retry   int              `name:"retry" placeholder:"N" help:"Retry up to N times when the connection fails: read-only operations, and mutations that carry an idempotency_key (others are never retried)."`
	Version kong.VersionFlag `name:"version" help:"Print the version and exit."`

	Doctor struct{} `cmd:"" help:"Check the connection: session_info as pretty JSON (exit 1 if it fails)."`
	Call   ctlCall  `cmd:"" help:"Call one operation and print the whole {ok,…} result as pretty JSON (exit 1 if ok is false)."`
	MCP    struct{} `cmd:"" name:"mcp" help:"Run the MCP stdio server (one JSON-RPC message per line; logs on stderr)."`
}

type ctlCall struct {
	Operation string `arg:"" name:"OP" help:"Operation name, e.g. terminal_list (see termsprawlctl call --help)."`
	Args      string `arg:"" optional:"" name:"JSON_ARGS" help:"Arguments as one JSON object (default {})."`
}

// Help lists the operations (kong.HelpProvider).
func (ctlCall) Help() string {
	var b strings.Builder
	b.WriteString("Operations (guide_read {\"topic\":\"overview\"} explains them):\n")
	for _, op := range tools.Operations() {
		fmt.Fprintf(&b, "  %-24s %s\n", op.Name, op.Description)
	}
	return b.String()
}

// MainCtl runs termsprawlctl with args (without the program name) and
// returns its exit code: 0 ok, 1 the tool result was ok:false, 2 usage,
// 3 termsprawl is not running, 4 an input operation's wait timed out (the
// input was sent).
func MainCtl(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var g ctlGrammar
	kctx, code, stop := parseArgs(ctlName, &g, args, stdout, stderr,
		kong.Description("termsprawl's agent-side helper: call the operations of the termsprawl that launched you, or serve them over MCP."))
	if stop {
		return code
	}
	if g.Wait < 0 {
		return usageError(stderr, ctlName, errors.New("--wait must not be negative"), "")
	}
	if g.Retry < 0 {
		return usageError(stderr, ctlName, errors.New("--retry must not be negative"), "")
	}
	opts := tools.CallOptions{Wait: g.Wait, Retry: g.Retry}

	var (
		opName   string
		callArgs json.RawMessage
	)
	mode := kctx.Selected().Name
	switch mode {
	case "doctor":
		opName, callArgs = "session_info", json.RawMessage("{}")
	case "call":
		_, a, err := validateCall(g.Call.Operation, json.RawMessage(g.Call.Args))
		if err != nil {
			hint := "usage: termsprawlctl [--session PATH] call OP [JSON_ARGS]"
			if op, ok := tools.Lookup(g.Call.Operation); ok {
				hint += "\n" + tools.OperationHelp(op)
			} else {
				hint += "\n(termsprawlctl call --help lists the operations)"
			}
			return usageError(stderr, ctlName, err, hint)
		}
		opName, callArgs = g.Call.Operation, a
	case "mcp":
	default:
		return usageError(stderr, ctlName, fmt.Errorf("unknown command %q", mode), "")
	}

	session, ok := resolveSession(g.Session)
	if !ok {
		fmt.Fprintln(stderr, MissingSessionMessage)
		return ExitUsage
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if mode == "mcp" {
		return runMCP(ctx, mcpConfig{Session: session, Wait: g.Wait}, stdin, stdout, stderr)
	}
	res := tools.Call(ctx, session, tools.Request{Operation: opName, Args: callArgs}, opts)
	if err := prettyJSON(stdout, res); err != nil {
		fmt.Fprintf(stderr, "%s: write result: %v\n", ctlName, err)
		return ExitNo
	}
	if !res.OK {
		if errors.Is(res.Err(), tools.ErrNotRunning) {
			return ExitNotRunning // no orchestrator answers: nothing was sent
		}
		return ExitNo
	}
	if waitTimedOut(res) {
		return ExitWaitTimeout
	}
	return ExitOK
}

// resolveSession returns the session file: the flag, else the environment
// variable, made absolute (no file is read).
func resolveSession(flag string) (string, bool) {
	s := flag
	if s == "" {
		s = os.Getenv(SessionEnv)
	}
	if strings.TrimSpace(s) == "" {
		return "", false
	}
	if abs, err := filepath.Abs(s); err == nil {
		s = abs
	}
	return s, true
}
