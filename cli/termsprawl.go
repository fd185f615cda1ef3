package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kong"

	"github.com/termsprawl/termsprawl/tools"
)

const humanName = "termsprawl"

// humanGrammar is termsprawl's command line. Global flags are accepted
// before or after the command.
type humanGrammar struct {
	StateDir   string           `name:"state-dir" env:"TERMSPRAWL_HOME" placeholder:"DIR" help:"State directory (default: $XDG_STATE_HOME/termsprawl or ~/.local/state/termsprawl)."`
	TmuxSocket string           `name:"tmux-socket" env:"TERMSPRAWL_TMUX_SOCKET" default:"termsprawl" placeholder:"NAME" help:"Private tmux server socket name (tmux -L NAME)."`
	Version    kong.VersionFlag `name:"version" help:"Print the version and exit."`

	Up       upCmd      `cmd:"" help:"Run the orchestrator (foreground; --detach runs it in the background)."`
	Down     struct{}   `cmd:"" help:"Stop the orchestrator; tmux sessions keep running."`
	New      newCmd     `cmd:"" help:"Launch a terminal node as the operator and print its id."`
	Agent    agentCmd   `cmd:"" help:"Launch an agent node (claude, codex, gemini, opencode or custom) and print its id."`
	Ls       lsCmd      `cmd:"" help:"List nodes: id, name, command, owner, status, size, clients."`
	Attach   nodeArg    `cmd:"" help:"Attach this terminal to a node (replaces this process with tmux attach)."`
	Open     nodeArg    `cmd:"" help:"Open a new external terminal window attached to a node."`
	Snapshot nodeArg    `cmd:"" help:"Print a node's visible screen."`
	Send     sendCmd    `cmd:"" help:"Submit text to a node (types it, then presses Enter once)."`
	Kill     nodeArg    `cmd:"" help:"Close a node: kill its program and tmux session."`
	Dialogs  dialogsCmd `cmd:"" help:"List pending dialogs (permission prompts and questions) of agents."`
	Answer   answerCmd  `cmd:"" help:"Answer a pending dialog: deny, allow or always."`
	Doctor   struct{}   `cmd:"" help:"Check tmux, the state directory, the lock, the endpoint and every node; exit 1 if a check fails."`
	Guide    guideCmd   `cmd:"" hidden:"" help:"Print a usage guide (overview, terminal, agents, dialogs)."`
}

type upCmd struct {
	Detach    bool          `name:"detach" short:"d" help:"Run in the background (logs to <state>/termsprawl.log) and return once it serves."`
	MaxNodes  int           `name:"max-nodes" default:"512" help:"Most nodes this orchestrator runs at once."`
	IdleAfter time.Duration `name:"idle-after" default:"30s" help:"Unobserved nodes sleep after this long (their mirror is rebuilt from tmux when observed); a negative value disables sleeping."`
}

type newCmd struct {
	Name    string   `name:"name" placeholder:"N" help:"Name shown in ls."`
	Cwd     string   `name:"cwd" placeholder:"DIR" help:"Working directory (default: the current directory)."`
	Command []string `arg:"" optional:"" name:"CMD" help:"Command and arguments after -- (default: your shell)."`
}

type agentCmd struct {
	Kind    string   `arg:"" name:"KIND" help:"Agent kind: claude, codex, gemini, opencode or custom (custom needs a command)."`
	Name    string   `name:"name" placeholder:"N" help:"Name shown in ls."`
	Cwd     string   `name:"cwd" placeholder:"DIR" help:"Working directory (default: the current directory)."`
	Command []string `arg:"" optional:"" name:"CMD" help:"Command and arguments after -- (default: the agent's usual command)."`
}

type lsCmd struct {
	JSON bool `name:"json" help:"Print terminal_list's value as JSON."`
}

type nodeArg struct {
	Node string `arg:"" name:"NODE" help:"Node id (see termsprawl ls)."`
}

type sendCmd struct {
	Node string   `arg:"" name:"NODE" help:"Node id."`
	Text []string `arg:"" name:"TEXT" help:"Text to submit (several words are joined with spaces)."`
}

type dialogsCmd struct {
	JSON bool `name:"json" help:"Print dialog_list's value as JSON."`
}

type answerCmd struct {
	Dialog    string `arg:"" name:"ID" help:"Dialog id (see termsprawl dialogs)."`
	Mode      string `arg:"" name:"MODE" help:"deny, allow or always (allow and remember)."`
	Selection string `name:"selection" placeholder:"OPTION" help:"The chosen option of a question."`
}

type guideCmd struct {
	Topic string `arg:"" optional:"" name:"TOPIC" default:"overview" help:"overview, terminal, agents or dialogs."`
}

// human is one run of the termsprawl CLI.
type human struct {
	ctx      context.Context
	stateDir string
	socket   string
	stdout   io.Writer
	stderr   io.Writer
	upOpts   upCmd // the flags of up
}

// MainTermsprawl runs the termsprawl CLI with args (without the program
// name) and returns its exit code: 0 ok, 1 the app said no, 2 usage,
// 3 not running.
func MainTermsprawl(args []string, stdout, stderr io.Writer) int {
	var g humanGrammar
	kctx, code, stop := parseArgs(humanName, &g, args, stdout, stderr,
		kong.Description("termsprawl: terminals for agents and humans, every one a tmux session on a private tmux server."))
	if stop {
		return code
	}
	h := &human{stdout: stdout, stderr: stderr, socket: g.TmuxSocket}
	if h.socket == "" {
		h.socket = tools.DefaultSocket
	}
	if g.StateDir != "" {
		abs, err := filepath.Abs(g.StateDir)
		if err != nil {
			return usageError(stderr, humanName, fmt.Errorf("--state-dir: %w", err), "")
		}
		h.stateDir = abs
	} else {
		dir, err := tools.StateDir()
		if err != nil {
			return usageError(stderr, humanName, err, "")
		}
		h.stateDir = dir
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.ctx = ctx

	switch cmd := kctx.Selected().Name; cmd {
	case "up":
		h.upOpts = g.Up
		if g.Up.Detach {
			return h.upDetached()
		}
		return h.up()
	case "down":
		return h.down()
	case "new":
		return h.launch("terminal_launch", "", g.New.Name, g.New.Cwd, g.New.Command)
	case "agent":
		return h.launch("agent_launch", g.Agent.Kind, g.Agent.Name, g.Agent.Cwd, g.Agent.Command)
	case "ls":
		return h.ls(g.Ls.JSON)
	case "attach":
		return h.attach(g.Attach.Node)
	case "open":
		return h.simple("terminal_external", map[string]any{"terminal": g.Open.Node}, func(json.RawMessage) {
			fmt.Fprintf(h.stdout, "opened an external terminal attached to %s\n", g.Open.Node)
		})
	case "snapshot":
		return h.snapshot(g.Snapshot.Node)
	case "send":
		return h.simple("terminal_submit", map[string]any{"terminal": g.Send.Node, "text": strings.Join(g.Send.Text, " ")}, nil)
	case "kill":
		return h.simple("terminal_close", map[string]any{"terminal": g.Kill.Node}, nil)
	case "dialogs":
		return h.dialogs(g.Dialogs.JSON)
	case "answer":
		args := map[string]any{"dialog": g.Answer.Dialog, "mode": g.Answer.Mode}
		if g.Answer.Selection != "" {
			args["selection"] = g.Answer.Selection
		}
		return h.simple("dialog_answer", args, nil)
	case "doctor":
		return h.doctor()
	case "guide":
		text, ok := tools.Guide(g.Guide.Topic)
		if !ok {
			return usageError(stderr, humanName, fmt.Errorf("unknown guide topic %q", g.Guide.Topic), "topics: "+strings.Join(tools.GuideTopics(), ", "))
		}
		fmt.Fprint(stdout, text)
		return ExitOK
	default:
		return usageError(stderr, humanName, fmt.Errorf("unknown command %q", cmd), "")
	}
}

// sessionFile is the operator's session file.
func (h *human) sessionFile() string { return tools.OperatorSessionPath(h.stateDir) }

// prepare validates an operation's args against the table (no I/O).
func (h *human) prepare(op string, args map[string]any) (json.RawMessage, int) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, usageError(h.stderr, humanName, err, "")
	}
	_, raw, err = validateCall(op, raw)
	if err != nil {
		return nil, usageError(h.stderr, humanName, err, "")
	}
	return raw, ExitOK
}

// call runs one operation as the operator. On failure it prints the error
// and returns the exit code (1, or 3 when termsprawl is not running).
func (h *human) call(op string, args map[string]any) (json.RawMessage, int) {
	raw, code := h.prepare(op, args)
	if code != ExitOK {
		return nil, code
	}
	res := tools.Call(h.ctx, h.sessionFile(), tools.Request{Operation: op, Args: raw}, tools.CallOptions{})
	if res.OK {
		return res.Value, ExitOK
	}
	if h.notRunning(res) {
		fmt.Fprintf(h.stderr, "termsprawl is not running (state dir %s): start it with `termsprawl up`\n  %s\n", h.stateDir, res.Error)
		return nil, ExitNotRunning
	}
	fmt.Fprintf(h.stderr, "%s: %s failed (%s): %s\n", humanName, op, res.Kind, res.Error)
	return nil, ExitNo
}

// notRunning tells "termsprawl is not running" (no operator session, no
// endpoint, connection refused) from other failures.
func (h *human) notRunning(res tools.Result) bool {
	if res.OK {
		return false
	}
	if errors.Is(res.Err(), tools.ErrNotRunning) {
		return true
	}
	// No operator session yet: termsprawl has never run on this state dir.
	_, err := os.Stat(h.sessionFile())
	return res.Kind == tools.KindUnavailable && err != nil
}

// simple runs op and calls show with its value on success.
func (h *human) simple(op string, args map[string]any, show func(json.RawMessage)) int {
	v, code := h.call(op, args)
	if code == ExitOK && show != nil {
		show(v)
	}
	return code
}

// launch runs terminal_launch or agent_launch and prints the new id.
func (h *human) launch(op, kind, name, cwd string, command []string) int {
	args := map[string]any{}
	if kind != "" {
		args["agent"] = kind
	}
	if name != "" {
		args["name"] = name
	}
	if len(command) > 0 {
		args["command"] = command
	}
	wd, err := os.Getwd()
	if cwd == "" {
		if err != nil {
			return usageError(h.stderr, humanName, fmt.Errorf("find the current directory (pass --cwd): %w", err), "")
		}
		cwd = wd
	} else if !filepath.IsAbs(cwd) {
		if err != nil {
			return usageError(h.stderr, humanName, fmt.Errorf("--cwd %s is relative and the current directory is unknown: %w", cwd, err), "")
		}
		cwd = filepath.Join(wd, cwd)
	}
	args["cwd"] = cwd
	r, code := callAs[tools.ReceiptOf[tools.NodeInfo]](h, op, args)
	if code != ExitOK {
		return code
	}
	fmt.Fprintln(h.stdout, r.Result.Terminal)
	return ExitOK
}

// callAs runs op and decodes its value as T, the operation's value type.
func callAs[T any](h *human, op string, args map[string]any) (T, int) {
	var out T
	v, code := h.call(op, args)
	if code != ExitOK {
		return out, code
	}
	if err := tools.DecodeValue(v, &out); err != nil {
		fmt.Fprintf(h.stderr, "%s: %s: %v\n", humanName, op, err)
		return out, ExitNo
	}
	return out, ExitOK
}

func (h *human) listNodes() ([]tools.NodeInfo, int) {
	l, code := callAs[tools.NodeList](h, "terminal_list", map[string]any{})
	return l.Terminals, code
}

func (h *human) ls(asJSON bool) int {
	rows, code := h.listNodes()
	if code != ExitOK {
		return code
	}
	if asJSON {
		_ = prettyJSON(h.stdout, tools.NodeList{Terminals: rows})
		return ExitOK
	}
	tw := tabwriter.NewWriter(h.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tCOMMAND\tOWNER\tSTATUS\tSIZE\tCLIENTS")
	for _, r := range rows {
		status := r.Status
		if r.ExitCode != nil {
			status += fmt.Sprintf(" (%d)", *r.ExitCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%dx%d\t%d\n", r.Terminal, dash(r.Name), dash(clipText(shellJoin(r.Command), 40)), dash(r.Owner), dash(status), r.Columns, r.Rows, r.Clients)
	}
	_ = tw.Flush()
	return ExitOK
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// shellJoin quotes argv for display.
func shellJoin(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`;&|<>()*?[]{}!#~") {
			parts[i] = a
			continue
		}
		parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(parts, " ")
}

func (h *human) snapshot(node string) int {
	snap, code := callAs[tools.Snapshot](h, "terminal_snapshot", map[string]any{"terminal": node})
	if code != ExitOK {
		return code
	}
	lines := snap.Lines
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	for _, l := range lines {
		fmt.Fprintln(h.stdout, l)
	}
	return ExitOK
}

// execFn replaces the process (tests stub it).
var execFn = syscall.Exec

func (h *human) attach(node string) int {
	if !tools.ValidNodeID(node) {
		return usageError(h.stderr, humanName, fmt.Errorf("%q is not a node id", node), "see termsprawl ls")
	}
	rows, code := h.listNodes()
	if code != ExitOK {
		return code
	}
	found := false
	for _, r := range rows {
		if r.Terminal == node {
			found = true
		}
	}
	if !found {
		fmt.Fprintf(h.stderr, "%s: no node %q (see termsprawl ls)\n", humanName, node)
		return ExitNo
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: tmux not found on PATH: %v\n", humanName, err)
		return ExitNo
	}
	argv := []string{"tmux", "-L", h.socket, "attach-session", "-t", "ts-" + node}
	err = execFn(tmux, argv, tools.EnvWithoutTmux(os.Environ()))
	fmt.Fprintf(h.stderr, "%s: exec %s: %v\n", humanName, shellJoin(argv), err)
	return ExitNo
}

func (h *human) dialogs(asJSON bool) int {
	list, code := callAs[tools.DialogList](h, "dialog_list", map[string]any{})
	if code != ExitOK {
		return code
	}
	rows := list.Dialogs
	if asJSON {
		_ = prettyJSON(h.stdout, list)
		return ExitOK
	}
	if len(rows) == 0 {
		fmt.Fprintln(h.stdout, "no pending dialogs")
		return ExitOK
	}
	tw := tabwriter.NewWriter(h.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNODE\tKIND\tTITLE\tOPTIONS")
	for _, r := range rows {
		id := r.ID
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, dash(r.Node), dash(r.Kind), clipText(strings.ReplaceAll(r.Title, "\n", " "), 60), dash(strings.Join(r.Options, " | ")))
	}
	_ = tw.Flush()
	fmt.Fprintln(h.stdout, "answer with: termsprawl answer ID deny|allow|always [--selection OPTION]")
	return ExitOK
}

// signalContext is ctx cancelled by SIGINT or SIGTERM; after the first
// signal the default behaviour is restored, so a second one kills.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	sctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sctx.Done()
		stop()
	}()
	return sctx, stop
}
