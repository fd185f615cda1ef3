package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"

	"github.com/termsprawl/termsprawl/tools"
)

const ctlName = "termsprawlctl"

// ctlGrammar is termsprawlctl's command line. Flags on the root are
// accepted before or after the mode.
type ctlGrammar struct {
	Session     string           `name:"session" placeholder:"PATH" predictor:"file" help:"Session file of the calling node (default: $TERMSPRAWL_SESSION_FILE, else <state>/sessions/operator.json)."`
	Wait        time.Duration    `name:"wait" placeholder:"DURATION" help:"When termsprawl is down, wait up to this long (e.g. 30s) for it to start, then call."`
	Retry       int              `name:"retry" placeholder:"N" help:"Retry up to N times when the connection fails: read-only operations, and mutations that carry an idempotency_key (others are never retried)."`
	VersionFlag kong.VersionFlag `name:"version" help:"Print the version and exit."`

	Doctor     ctlDoctor     `cmd:"" help:"Check the connection: session_info as pretty JSON (exit 1 if it fails, 3 if termsprawl is not running)."`
	Call       ctlCall       `cmd:"" help:"Call one operation and print the whole {ok,…} result as pretty JSON (exit 1 if ok is false)."`
	MCP        ctlMCP        `cmd:"" name:"mcp" help:"Run the MCP stdio server (one JSON-RPC message per line; warnings on stderr), or print the HTTP setup with --print-http."`
	Hook       ctlHook       `cmd:"" help:"Run as an agent's hook (claude, codex, gemini): permission requests become dialogs for the human, state events agent_report."`
	Guide      ctlGuide      `cmd:"" help:"Print a usage guide as text: overview, terminal, agents or dialogs."`
	HelpCmd    helpCmd       `cmd:"" name:"help" help:"Show help for termsprawlctl or one of its commands."`
	VersionCmd versionCmd    `cmd:"" name:"version" help:"Print the version, commit and Go version."`
	Completion completionCmd `cmd:"" help:"Print a shell completion script (bash, zsh or fish)."`
	// Agent-facing docs generated from the table (agentdocs.go).
	AgentContext ctlAgentContext `cmd:"" name:"agent-context" help:"Print every operation, argument, enum, output schema, error kind and exit code as versioned JSON."`
	Usage        ctlUsage        `cmd:"" name:"usage" help:"Print one screen: how to call, every operation by topic, the exit codes."`
	Skill        ctlSkill        `cmd:"" name:"skill" help:"Print SKILL.md, or with --out DIR write SKILL.md, reference.md and agent-context.json."`
}

// Examples of the root help.
func (ctlGrammar) Examples() string {
	return `termsprawlctl doctor                                  # who am I (session_info)
termsprawlctl call terminal_list                      # every node, as JSON
termsprawlctl call terminal_submit '{"terminal":"tests","text":"go test ./...","wait":{"wait":"regex","pattern":"^(ok|FAIL)"}}'
termsprawlctl guide terminal                          # how to drive terminals
termsprawlctl --session ~/.local/state/termsprawl/sessions/operator.json call session_info`
}

type ctlDoctor struct{}

func (ctlDoctor) Examples() string {
	return `termsprawlctl doctor
termsprawlctl --session /path/to/state/sessions/build.json doctor`
}

type ctlCall struct {
	Operation string `arg:"" name:"OP" predictor:"operation" help:"Operation name, e.g. terminal_list (termsprawlctl call OP --help prints its arguments and an example)."`
	Args      string `arg:"" optional:"" name:"JSON_ARGS" help:"Arguments as one JSON object (default {})."`
}

// Help lists the operations (kong.HelpProvider).
func (ctlCall) Help() string {
	var b strings.Builder
	b.WriteString("Operations (termsprawlctl guide overview explains them):\n\n")
	for _, op := range tools.Operations() {
		fmt.Fprintf(&b, "  %-24s %s\n", op.Name, op.Description)
	}
	b.WriteString("\nExit codes: 0 ok, 1 termsprawl said no (ok:false), 2 usage (nothing was sent), 3 termsprawl is not running, 4 an input's wait timed out (the input was sent).")
	return b.String()
}

func (ctlCall) Examples() string {
	return `termsprawlctl call terminal_list
termsprawlctl call terminal_launch '{"command":["bash"],"name":"tests"}'
termsprawlctl call terminal_submit '{"terminal":"tests","text":"make","wait":{"wait":"text","text":"done","timeout_ms":40000}}'
termsprawlctl call terminal_snapshot '{"terminal":"tests"}'
termsprawlctl call terminal_wait_for --help              # its arguments, types, defaults and an example
termsprawlctl --wait 30s call session_info               # wait for a restarting termsprawl`
}

type ctlGuide struct {
	Topic string `arg:"" optional:"" name:"TOPIC" default:"overview" predictor:"topic" help:"overview, terminal, agents or dialogs."`
}

func (ctlGuide) Examples() string {
	return `termsprawlctl guide
termsprawlctl guide terminal`
}

// helpCmd is `NAME help [COMMAND…]`.
type helpCmd struct {
	Command []string `arg:"" optional:"" name:"COMMAND" help:"The command to explain."`
}

func (helpCmd) Examples() string { return "{{name}} help\n{{name}} help COMMAND" }

// versionCmd is `NAME version`.
type versionCmd struct {
	JSON bool `name:"json" help:"Print version, commit, Go version and platform as JSON."`
}

func (versionCmd) Examples() string { return "{{name}} version\n{{name}} version --json" }

func (completionCmd) Examples() string {
	return `{{name}} completion bash > ~/.local/share/bash-completion/completions/{{name}}
echo 'source <({{name}} completion zsh)' >> ~/.zshrc
{{name}} completion fish > ~/.config/fish/completions/{{name}}.fish`
}

// ctlOptions are the kong options of termsprawlctl.
func ctlOptions() []kong.Option {
	return []kong.Option{kong.Description("termsprawl's agent-side helper: call the operations of the termsprawl that launched you, or serve them over MCP.")}
}

// printVersion prints versionLine or, with asJSON, the build info.
func printVersion(stdout io.Writer, name string, asJSON bool) int {
	if asJSON {
		_ = prettyJSON(stdout, readBuildInfo())
		return ExitOK
	}
	fmt.Fprintln(stdout, versionLine(name))
	return ExitOK
}

// MainCtl runs termsprawlctl with args (without the program name) and
// returns its exit code: 0 ok, 1 the tool result was ok:false, 2 usage,
// 3 termsprawl is not running, 4 an input operation's wait timed out (the
// input was sent).
func MainCtl(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if f, ok := parseFastCtl(args); ok {
		return f.run(stdout, stderr)
	}
	if op, ok := callOpHelp(args); ok {
		return printCallOpHelp(op, stdout, stderr)
	}
	var g ctlGrammar
	kctx, code, stop := parseArgs(ctlName, &g, args, stdout, stderr, ctlPredictors(), ctlOptions()...)
	if stop {
		return code
	}
	if g.Wait < 0 {
		return usageError(stderr, ctlName, errors.New("--wait must not be negative"), "")
	}
	if g.Retry < 0 {
		return usageError(stderr, ctlName, errors.New("--retry must not be negative"), "")
	}
	opts := ctlCallOptions(g.Wait, g.Retry)

	var (
		opName   string
		callArgs json.RawMessage
	)
	mode := kctx.Selected().Name
	help := func() int {
		var h ctlGrammar
		return showHelp(ctlName, &h, g.HelpCmd.Command, stdout, stderr, ctlOptions()...)
	}
	if code, ok := runShared(mode, ctlName, help, g.VersionCmd, g.Completion, g.Guide.Topic, stdout, stderr); ok {
		return code
	}
	switch mode {
	case "agent-context":
		return printAgentContext(stdout)
	case "usage":
		fmt.Fprint(stdout, usageText())
		return ExitOK
	case "skill":
		return runSkill(stdout, stderr, g.Skill.Out)
	case "doctor":
		opName, callArgs = "session_info", json.RawMessage("{}")
	case "call":
		a, code, ok := validateCtlCall(g.Call.Operation, g.Call.Args, stderr)
		if !ok {
			return code
		}
		opName, callArgs = g.Call.Operation, a
	case "mcp":
		sc := resolveSession(g.Session)
		if sc.Path == "" {
			printMissingSession(stderr, sc)
			return ExitUsage
		}
		return runMCPCommand(&g, sc.Path, stdout, stderr)
	case "hook":
		sc := resolveSession(g.Session)
		if sc.Path == "" {
			return hookSessionMissing(g.Hook, stderr)
		}
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer cancel()
		return runHook(ctx, g.Hook, sc.Path, stdin, stdout, stderr)
	default:
		return usageError(stderr, ctlName, fmt.Errorf("unknown command %q", mode), "")
	}
	return runCtlCall(g.Session, opName, callArgs, opts, stdout, stderr)
}

// validateCtlCall checks `call OP [JSON_ARGS]` against the table (no
// I/O); on failure it prints the usage error and returns its exit code.
func validateCtlCall(opName, args string, stderr io.Writer) (json.RawMessage, int, bool) {
	_, a, err := validateCall(opName, json.RawMessage(args))
	if err != nil {
		hint := "usage: termsprawlctl [--session PATH] call OP [JSON_ARGS]"
		if op, ok := tools.Lookup(opName); ok {
			hint += "\n" + tools.OperationHelp(op)
		} else {
			hint += "\n(termsprawlctl call --help lists the operations)"
		}
		return nil, usageError(stderr, ctlName, err, hint), false
	}
	return a, 0, true
}

// runCtlCall is call and doctor once their arguments are known: resolve
// the session, make the one call, print it, pick the exit code.
func runCtlCall(sessionFlag, opName string, callArgs json.RawMessage, opts tools.CallOptions, stdout, stderr io.Writer) int {
	sc := resolveSession(sessionFlag)
	if sc.Path == "" {
		printMissingSession(stderr, sc)
		return ExitUsage
	}
	session := sc.Path

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	res := tools.Call(ctx, session, tools.Request{Operation: opName, Args: callArgs}, opts)
	if err := prettyJSON(stdout, res); err != nil {
		fmt.Fprintf(stderr, "%s: write result: %v\n", ctlName, err)
		return ExitNo
	}
	if !res.OK {
		if hint := sessionHint(sc); hint != "" && res.Kind == tools.KindUnavailable {
			fmt.Fprintf(stderr, "%s: %s\n", ctlName, hint)
		}
		if errors.Is(res.Err(), tools.ErrNotRunning) {
			fmt.Fprintf(stderr, "%s: termsprawl is not running (no orchestrator answers for %s): start it with `termsprawl up`\n", ctlName, session)
			return ExitNotRunning // no orchestrator answers: nothing was sent
		}
		return ExitNo
	}
	if waitTimedOut(res) {
		return ExitWaitTimeout
	}
	return ExitOK
}
