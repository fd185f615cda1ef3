package cli

import (
	"bytes"
	"cmp"
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
// before or after the command (except after send's NODE: from there on
// everything is the text).
type humanGrammar struct {
	StateDir    string           `name:"state-dir" env:"TERMSPRAWL_HOME" placeholder:"DIR" predictor:"dir" help:"State directory (default: $XDG_STATE_HOME/termsprawl or ~/.local/state/termsprawl)."`
	TmuxSocket  string           `name:"tmux-socket" env:"TERMSPRAWL_TMUX_SOCKET" default:"termsprawl" placeholder:"NAME" help:"Private tmux server socket name (tmux -L NAME)."`
	VersionFlag kong.VersionFlag `name:"version" help:"Print the version and exit."`
	// Operator: inside a node, act as the operator anyway (innode.go).
	Operator bool `name:"operator" help:"Inside a node, act with the operator's session instead of the node's own (for a human typing in a node's shell; C-b a's picker passes it)."`

	Up         upCmd         `cmd:"" help:"Run the orchestrator (foreground; --detach runs it in the background)."`
	Down       downCmd       `cmd:"" help:"Stop the orchestrator; nodes keep running (--all ends them and the tmux server too)."`
	New        newCmd        `cmd:"" help:"Launch a terminal node as the operator and print its id."`
	Agent      agentCmd      `cmd:"" help:"Launch an agent node (claude, codex, gemini, opencode or custom) and print its id."`
	Ls         lsCmd         `cmd:"" help:"List nodes: id, name, kind, state, sandbox, cost, command, owner, size, clients."`
	Attach     attachCmd     `cmd:"" help:"Attach this terminal to a node (replaces this process with tmux attach)."`
	Open       openCmd       `cmd:"" help:"Open a new external terminal window attached to a node."`
	Snapshot   snapshotCmd   `cmd:"" help:"Print a node's visible screen."`
	Send       sendCmd       `cmd:"" help:"Submit text to a node (types it, then presses Enter once)."`
	Kill       killCmd       `cmd:"" help:"Close a node: end its program and its tmux session."`
	Record     recordCmd     `cmd:"" help:"Record a node into <state>/traces (asciicast v2); --off stops it."`
	Replay     replayCmd     `cmd:"" help:"Play a recording in this terminal at its recorded pace (--speed for faster)."`
	Dialogs    dialogsCmd    `cmd:"" help:"List pending dialogs (permission prompts and questions) of agents."`
	Answer     answerCmd     `cmd:"" help:"Answer a pending dialog: deny, allow or always; a question with --choice VALUE."`
	Pick       pickCmd       `cmd:"" help:"Pick a pending dialog and answer it, one line at a time (what C-b a runs in a popup inside any node)."`
	Why        whyCmd        `cmd:"" help:"Print an agent's state and the evidence behind it, newest first."`
	Notify     notifyCmd     `cmd:"" help:"Notifications: test sends one to each target and prints what each answered."`
	Hosts      hostsCmd      `cmd:"" help:"List the hosts driven over ssh (state, nodes, round trip); rm NAME removes one."`
	Monitor    monitorCmd    `cmd:"" help:"Print the read-only web monitor's URL and open it in the browser (--no-open: print only)."`
	Dash       dashCmd       `cmd:"" help:"The dashboard: every node, live, in one terminal (also termsprawl with no arguments on a terminal)."`
	Doctor     doctorCmd     `cmd:"" help:"Check tmux, the state directory, the lock, the endpoint and every node; exit 1 if a check fails, 3 if termsprawl is not running."`
	HelpCmd    helpCmd       `cmd:"" name:"help" help:"Show help for termsprawl or one of its commands."`
	VersionCmd versionCmd    `cmd:"" name:"version" help:"Print the version, commit and Go version."`
	Completion completionCmd `cmd:"" help:"Print a shell completion script (bash, zsh or fish)."`
	Guide      guideCmd      `cmd:"" hidden:"" help:"Print a usage guide (overview, terminal, agents, dialogs)."`

	// press, type, paste, interrupt (keys.go), task (tasks.go), recordings
	// (recordings.go).
	moreCmds     `embed:""`
	worktreeCmds `embed:""` // worktree.go
	// restore, forget (restore.go).
	rebootCmds `embed:""`
	// config, audit, policy (policycmd.go).
	policyCmds `embed:""`
	fleetCmds  `embed:""` // grep, fork (fleet.go)
	// screenshot (screenshot.go).
	dailyCmds `embed:""`
}

// Examples of the root help: the first five minutes.
func (humanGrammar) Examples() string {
	return `termsprawl up --detach                     # start termsprawl in the background
termsprawl new --name build -- bash        # launch a node; prints its id
termsprawl ls                              # the nodes
termsprawl send build make test            # type a line into it and press Enter
termsprawl snapshot build                  # what is on its screen
termsprawl attach build                    # take over this terminal (M-F12 detaches, also inside tmux)
termsprawl down                            # stop termsprawl; nodes keep running`
}

// Help is the root help's detail.
func (humanGrammar) Help() string {
	return "A NODE is named by its id, else its name when unique, else a unique id prefix. Exit codes: 0 ok, 1 termsprawl said no, 2 usage, 3 termsprawl is not running."
}

type upCmd struct {
	Detach    bool          `name:"detach" short:"d" help:"Run in the background (logs to <state>/termsprawl.log) and return once it serves."`
	ShardSize int           `name:"shard-size" hidden:"" help:"Nodes per private tmux server (default 8; for tests)."`
	MaxNodes  int           `name:"max-nodes" default:"1024" help:"Most nodes this orchestrator runs at once."`
	IdleAfter time.Duration `name:"idle-after" default:"30s" help:"Unobserved nodes sleep after this long (their mirror is rebuilt from tmux when observed); a negative value disables sleeping."`
	LogLevel  string        `name:"log-level" enum:"auto,debug,info,warn,error" default:"auto" help:"Log level of the log on stderr: debug, info, warn or error; auto is warn when stderr is a terminal, else info."`
	Hosts     []string      `name:"host" sep:"none" placeholder:"NAME=DEST" help:"Also drive the tmux server of another machine over ssh (repeatable; DEST is [user@]host or an ssh config alias). Saved in <state>/hosts.json, so later runs reconnect to it."`
	HostCtls  []string      `name:"host-ctl" sep:"none" placeholder:"NAME=PATH" help:"Absolute path of termsprawlctl on host NAME (default: the one on its PATH)."`
	// HostAllowElsewhere: the operator's grant to the agents on a host.
	HostAllowElsewhere []string `name:"host-allow-elsewhere" sep:"none" placeholder:"NAME" help:"Let the agents running on host NAME launch on this machine and other hosts, and read and drive the terminals there (default: they are kept to their host). Saved in <state>/hosts.json (launch_elsewhere)."`
	Monitor            bool     `name:"monitor" help:"Also print the read-only web monitor's URL and open it with xdg-open (see termsprawl monitor)."`
	NoOpen             bool     `name:"no-open" help:"Print the monitor's URL but open nothing (implies --monitor)."`
	// MCPAllowOrigin: Origins /mcp accepts (every other Origin is refused).
	MCPAllowOrigin []string `name:"mcp-allow-origin" placeholder:"ORIGIN" help:"Accept this Origin on the MCP endpoint /mcp (repeatable; e.g. http://localhost:6274 for a browser-based MCP client). Any other Origin is refused."`
	// Notify and NotifyMode: where agents' notifications go (CONTRACT §20).
	Notify     []string `name:"notify" sep:"none" placeholder:"TARGET" help:"Notify humans here when an agent needs them, errors, crashes or finishes (repeatable): tmux (the default), desktop, terminal (OSC 9/777), webhook=URL. Added to <state>/notify.json's targets."`
	NotifyMode string   `name:"notify-mode" placeholder:"MODE" help:"quiet: only when an agent needs a human; normal (the default): also errors and crashes; all: also finished turns and exits."`
	// Restore: start every lost node again at start (restore.go).
	Restore bool `name:"restore" help:"Start every lost node (its tmux server was gone: a reboot) again once termsprawl serves, as termsprawl restore --all does."`
}

func (upCmd) Examples() string {
	return `termsprawl up                              # foreground: banner on stdout, log on stderr; Ctrl-C stops it
termsprawl up --detach                     # background: log in <state>/termsprawl.log
termsprawl up --log-level info             # show the info log on a terminal too
TERMSPRAWL_HOME=/tmp/ts termsprawl --tmux-socket ts2 up --detach   # a second, separate termsprawl
termsprawl up --host big=me@big.example    # also run nodes on big: termsprawl new --host big
termsprawl up --detach --monitor --no-open # print the web monitor's URL, open no browser
termsprawl up --detach --restore           # after a reboot: start the lost nodes again`
}

type downCmd struct {
	All bool `name:"all" help:"Also end every node and the private tmux server (tmux -L SOCKET kill-server)."`
}

func (downCmd) Examples() string {
	return `termsprawl down                            # stop termsprawl; nodes keep running, the next up adopts them
termsprawl down --all                      # stop termsprawl and end every node`
}

type newCmd struct {
	Name    string `name:"name" placeholder:"N" help:"Name shown in ls (and usable as NODE while it is unique)."`
	Host    string `name:"host" placeholder:"NAME" help:"Run it on this host (from up --host; --cwd is then a path there, default its home)."`
	Cwd     string `name:"cwd" placeholder:"DIR" predictor:"dir" help:"Working directory (default: the current directory)."`
	JSON    bool   `name:"json" help:"Print the new node as JSON instead of its id."`
	Attach  bool   `name:"attach" short:"a" help:"Then attach this terminal to it (as termsprawl attach; on a terminal the id is printed when the attach ends)."`
	Sandbox string `name:"sandbox" placeholder:"PROFILE" help:"Run it in a bubblewrap sandbox: workspace (writes only its directory, its agent's config and private caches; secrets, termsprawl's state and tmux sockets hidden), guard (only termsprawl's state, tmux sockets and other processes hidden) or none. Default: none."`
	worktreeFlags
	envFlags
	Command []string `arg:"" optional:"" name:"CMD" predictor:"command" help:"Command and arguments after -- (default: your shell)."`
}

func (newCmd) Examples() string {
	return `termsprawl new                             # your shell, in the current directory
termsprawl new --name build -- bash
termsprawl new --cwd ~/src/app --name web -- npm run dev
termsprawl new --json -- python3
termsprawl new --attach --name scratch     # launch and take over this terminal in one step`
}

type agentCmd struct {
	Kind    string `arg:"" name:"KIND" enum:"claude,codex,gemini,opencode,custom" help:"Agent kind: claude, codex, gemini, opencode or custom (custom needs a command)."`
	Host    string `name:"host" placeholder:"NAME" help:"Run it on this host (from up --host; --cwd is then a path there, default its home)."`
	Name    string `name:"name" placeholder:"N" help:"Name shown in ls."`
	Cwd     string `name:"cwd" placeholder:"DIR" predictor:"dir" help:"Working directory (default: the current directory)."`
	JSON    bool   `name:"json" help:"Print the new node as JSON instead of its id."`
	Sandbox string `name:"sandbox" placeholder:"PROFILE" help:"Run it in a bubblewrap sandbox: workspace (writes only its directory, its agent's config and private caches; secrets, termsprawl's state and tmux sockets hidden), guard (only termsprawl's state, tmux sockets and other processes hidden) or none. Default: workspace, or [sandbox] default in config.toml."`
	// Policy names a [policy.named.NAME] table of config.toml.
	Policy string `name:"policy" placeholder:"NAME" help:"Add the permission rules of [policy.named.NAME] in config.toml to this agent's (termsprawl policy test shows what decides)."`
	worktreeFlags
	envFlags
	Command []string `arg:"" optional:"" name:"CMD" predictor:"command" help:"Command and arguments after -- (default: the agent's usual command)."`
}

func (agentCmd) Examples() string {
	return `termsprawl agent claude
termsprawl agent codex --name reviewer --cwd ~/src/app
termsprawl agent codex --env-from-shell OPENAI_API_KEY   # its key, from this shell (never printed)
termsprawl agent gemini --env GEMINI_API_KEY="$(pass gemini)"
termsprawl agent claude --policy ci              # with config.toml's [policy.named.ci] rules
termsprawl agent custom --name helper -- bash    # any program, wired to termsprawl
termsprawl agent claude --sandbox guard          # may write outside its directory; termsprawl's state stays hidden`
}

type lsCmd struct {
	JSON bool `name:"json" help:"Print terminal_list's value as JSON."`
}

func (lsCmd) Examples() string {
	return `termsprawl ls
termsprawl ls --json | jq -r '.terminals[].terminal'`
}

// nodeArg is the NODE argument of the commands that name one node.
type nodeArg struct {
	Node string `arg:"" name:"NODE" predictor:"node" help:"Node: its id, else its name when unique, else a unique id prefix (see termsprawl ls)."`
}

type attachCmd struct {
	ReadOnly bool `name:"read-only" short:"r" help:"Watch without typing (tmux attach-session -r)."`
	nodeArg
}

func (attachCmd) Examples() string {
	return `termsprawl attach build                    # M-F12 (Alt+F12) or C-b d detaches; config.toml [keys] changes it
termsprawl attach --read-only build        # watch, without typing into it`
}

type openCmd struct{ nodeArg }

func (openCmd) Examples() string {
	return `termsprawl open build                      # in the terminal emulator of agent-tools/preferences.json, else the first one found`
}

type snapshotCmd struct {
	JSON bool `name:"json" help:"Print terminal_snapshot's value (lines, cursor, modes, status, revision) as JSON."`
	nodeArg
}

func (snapshotCmd) Examples() string {
	return `termsprawl snapshot build
termsprawl snapshot --json build | jq .cursor`
}

type sendCmd struct {
	jsonFlag
	Node string   `arg:"" name:"NODE" predictor:"node" help:"Node: its id, else its name when unique, else a unique id prefix."`
	Text []string `arg:"" name:"TEXT" help:"Text to submit: everything after NODE, flags included (several words are joined with spaces)."`
}

func (sendCmd) Examples() string {
	return `termsprawl send build make test            # types "make test" and presses Enter
termsprawl send build ls -la               # everything after NODE is the text, flags included
termsprawl send build -- --help            # -- first to send text that is only --help
termsprawl send build ''                   # just press Enter
termsprawl send --json build make          # the receipt as JSON (flags go before NODE)`
}

type killCmd struct {
	jsonFlag
	nodeArg
}

func (killCmd) Examples() string {
	return `termsprawl kill build
termsprawl kill build-2`
}

type dialogsCmd struct {
	JSON bool `name:"json" help:"Print dialog_list's value as JSON."`
}

func (dialogsCmd) Examples() string {
	return `termsprawl dialogs
termsprawl dialogs --json`
}

type answerCmd struct {
	Dialog    string `arg:"" name:"ID" predictor:"dialog" help:"Dialog id (see termsprawl dialogs)."`
	Mode      string `arg:"" optional:"" name:"MODE" predictor:"mode" help:"deny, allow or always (allow and remember); with --choice, allow when left out."`
	Selection string `name:"choice" aliases:"selection" placeholder:"VALUE" help:"The chosen choice of a question (one of its options; termsprawl dialogs lists them)."`
	Reason    string `name:"reason" placeholder:"TEXT" help:"Why: the agent is told (e.g. why a permission was denied)."`
	JSON      bool   `name:"json" help:"Print the receipt as JSON instead of one line."`
}

func (answerCmd) Examples() string {
	return `termsprawl answer dialog-1 allow
termsprawl answer dialog-2 deny --reason 'use the staging database, not production'
termsprawl answer dialog-3 --choice 'Use the staging database'`
}

type doctorCmd struct {
	JSON bool `name:"json" help:"Print the checks as JSON: {ok, checks: [{name, ok, detail}]}."`
}

func (doctorCmd) Examples() string {
	return `termsprawl doctor
termsprawl doctor --json`
}

type guideCmd struct {
	Topic string `arg:"" optional:"" name:"TOPIC" default:"overview" predictor:"topic" help:"overview, terminal, agents or dialogs."`
}

// human is one run of the termsprawl CLI.
type human struct {
	ctx      context.Context
	cmd      string // the command, for messages
	stateDir string
	socket   string
	stdout   io.Writer
	stderr   io.Writer
	upOpts   upCmd  // the flags of up
	launched string // the id of the node launch made (for new --attach)
	// afterAttach prints what new --attach held back (launchAttach); set,
	// the attach runs as a child instead of replacing this process.
	afterAttach func()
	// launchPolicy is agent --policy NAME.
	launchPolicy string
	// worktree is the launch's worktree argument (worktree.go).
	worktree map[string]any
	// sandbox is the launch's --sandbox (CONTRACT §27).
	sandbox string
	// env is the launch's env argument (--env, --env-from-shell; env.go).
	env map[string]string
	// insideNode: this termsprawl runs inside a node and acts with its
	// session (inNode), not the operator's (innode.go).
	insideNode bool
	inNode     nodeContext
}

// humanOptions are the kong options of termsprawl.
func humanOptions() []kong.Option {
	return []kong.Option{kong.Description("termsprawl: terminals for agents and humans, every one a tmux session on a private tmux server.")}
}

// humanValueFlags are termsprawl's global flags that take a value (a test
// checks this against the grammar).
var humanValueFlags = map[string]bool{"--state-dir": true, "--tmux-socket": true}

// sendArgs makes everything after the NODE of send (and type, paste,
// press: textCmds) the text, flags included: `termsprawl send build ls
// -la` sends "ls -la". It inserts "--" after NODE unless one is there
// already, or the only word after NODE is --help or -h (help, nothing is
// sent; `send NODE -- --help` sends it).
func sendArgs(args []string) []string {
	i := 0
	skipFlags := func() bool {
		for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-" {
			if args[i] == "--" {
				return false
			}
			if humanValueFlags[args[i]] {
				i++
			}
			i++
		}
		return true
	}
	if !skipFlags() || i >= len(args) || !textCmds[args[i]] {
		return args
	}
	i++
	if !skipFlags() || i+1 >= len(args) || args[i+1] == "--" {
		return args
	}
	if rest := args[i+1:]; len(rest) == 1 && (rest[0] == "--help" || rest[0] == "-h") {
		return args
	}
	out := append([]string{}, args[:i+1]...)
	out = append(out, "--")
	return append(out, args[i+1:]...)
}

// MainTermsprawl runs the termsprawl CLI with args (without the program
// name) and returns its exit code: 0 ok, 1 the app said no, 2 usage,
// 3 not running.
func MainTermsprawl(args []string, stdout, stderr io.Writer) int {
	var g humanGrammar
	kctx, code, stop := parseArgs(humanName, &g, worktreeArgs(sendArgs(dashArgs(args))), stdout, stderr, humanPredictors(), humanOptions()...)
	if stop {
		return code
	}
	cmd := kctx.Selected().Name
	help := func() int {
		var hg humanGrammar
		return showHelp(humanName, &hg, g.HelpCmd.Command, stdout, stderr, humanOptions()...)
	}
	if code, ok := runShared(cmd, humanName, help, g.VersionCmd, g.Completion, g.Guide.Topic, stdout, stderr); ok {
		return code
	}

	h := &human{stdout: stdout, stderr: stderr, socket: g.TmuxSocket, cmd: cmd}
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
	if !g.Operator {
		h.inNode, h.insideNode = insideNode(h.stateDir, h.socket)
	}

	if cmd == "new" || cmd == "agent" {
		w, err := g.New.args()
		if cmd == "agent" {
			w, err = g.Agent.args()
		}
		if err != nil {
			return usageError(stderr, h.prefix(), err, "")
		}
		h.worktree = w // the launch's worktree argument (worktree.go)
		h.sandbox = g.New.Sandbox
		if cmd == "agent" {
			h.sandbox = g.Agent.Sandbox
		}
		f := g.New.envFlags
		if cmd == "agent" {
			f = g.Agent.envFlags
		}
		env, err := f.env(os.LookupEnv)
		if err != nil {
			return usageError(stderr, h.prefix(), err, "")
		}
		h.env = env
		trustSetup, cwd := g.New.TrustSetup, g.New.Cwd
		if cmd == "agent" {
			trustSetup, cwd = g.Agent.TrustSetup, g.Agent.Cwd
		}
		if trustSetup {
			// The human's approval, here and now, before the launch; an
			// agent's launch has no way to ask for it (no operation
			// writes trust.json).
			if code := h.approve(cmp.Or(cwd, "."), stderr); code != ExitOK {
				return code
			}
		}
	}
	switch cmd {
	case "up":
		h.upOpts = g.Up
		if g.Up.Detach {
			return h.upDetached()
		}
		return h.up()
	case "down":
		return h.down(g.Down.All)
	case "new":
		if g.New.Attach && (isTerminal(h.stdout) || isTerminal(h.stderr)) {
			return h.launchAttach(g.New.Name, g.New.Cwd, g.New.Host, g.New.Command, g.New.JSON)
		}
		code := h.launch("terminal_launch", "", g.New.Name, g.New.Cwd, g.New.Host, g.New.Command, g.New.JSON)
		if code == ExitOK && g.New.Attach {
			return h.attach(h.launched, false)
		}
		return code
	case "agent":
		h.launchPolicy = g.Agent.Policy
		return h.launch("agent_launch", g.Agent.Kind, g.Agent.Name, g.Agent.Cwd, g.Agent.Host, g.Agent.Command, g.Agent.JSON)
	case "ls":
		return h.ls(g.Ls.JSON)
	case "attach":
		return h.attach(g.Attach.Node, g.Attach.ReadOnly)
	case "open":
		return h.open(g.Open.Node)
	case "snapshot":
		return h.snapshot(g.Snapshot.Node, g.Snapshot.JSON)
	case "kill":
		return mutate(h, "terminal_close", map[string]any{"terminal": g.Kill.Node}, g.Kill.JSON, func(r tools.CloseResult) {
			fmt.Fprintf(h.stdout, "closed node %s\n", cmp.Or(r.Terminal, g.Kill.Node))
		})
	case "record":
		return h.recordNode(g.Record.Node, g.Record.Off, g.Record.JSON)
	case "replay":
		return h.replay(g.Replay)
	case "dialogs":
		return h.dialogs(g.Dialogs.JSON)
	case "answer":
		return h.answer(g.Answer)
	case "pick":
		return h.pick(os.Stdin)
	case "why":
		return h.why(g.Why)
	case "notify":
		return h.notifyTest(g.Notify.JSON)
	case "hosts":
		return h.hosts(g.Hosts)
	case "doctor":
		return h.doctor(g.Doctor.JSON)
	case "monitor":
		return h.monitor(g.Monitor.NoOpen)
	case "dash":
		return h.dash(g.Dash)
	default:
		if code, ok := h.runMoreCmd(cmd, &g); ok {
			return code
		}
		if code, ok := h.runRebootCmd(cmd, &g); ok {
			return code
		}
		if code, ok := h.runPolicyCmd(cmd, &g); ok {
			return code
		}
		if code, ok := h.runFleetCmd(cmd, &g); ok {
			return code
		}
		if code, ok := h.runDailyCmd(cmd, &g); ok {
			return code
		}
		return usageError(stderr, humanName, fmt.Errorf("unknown command %q", cmd), "")
	}
}

// sessionFile is the session termsprawl acts with: the operator's of its
// state directory, except inside a node, where it is the node's own
// unless --operator says otherwise (innode.go; "" when the node's is not
// known).
func (h *human) sessionFile() string {
	if h.insideNode {
		return h.inNode.Session
	}
	return tools.OperatorSessionPath(h.stateDir)
}

// prefix is "termsprawl CMD" for messages.
func (h *human) prefix() string {
	if h.cmd == "" {
		return humanName
	}
	return humanName + " " + h.cmd
}

// prepare validates an operation's args against the table (no I/O).
func (h *human) prepare(op string, args map[string]any) (json.RawMessage, int) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, usageError(h.stderr, h.prefix(), err, "")
	}
	_, raw, err = validateCall(op, raw)
	if err != nil {
		return nil, usageError(h.stderr, h.prefix(), errors.New(humanize(err.Error())), "")
	}
	return raw, ExitOK
}

// call runs one operation as the operator. On failure it prints one
// sentence in the CLI's own terms and returns the exit code (1, or 3 when
// termsprawl is not running).
func (h *human) call(op string, args map[string]any) (json.RawMessage, int) {
	if h.insideNode && h.inNode.Session == "" {
		fmt.Fprintf(h.stderr, "%s: refused: this node's own session is not known (no $%s): %s\n", h.prefix(), SessionEnv, h.inNodeHint())
		return nil, ExitNo
	}
	raw, code := h.prepare(op, args)
	if code != ExitOK {
		return nil, code
	}
	res := tools.Call(h.ctx, h.sessionFile(), tools.Request{Operation: op, Args: raw}, tools.CallOptions{})
	if res.OK {
		return res.Value, ExitOK
	}
	return nil, h.fail(res)
}

// fail prints a failed result and returns its exit code.
func (h *human) fail(res tools.Result) int {
	if h.notRunning(res) {
		h.printNotRunning()
		return ExitNotRunning
	}
	msg := res.Error
	if res.Kind == tools.KindUnavailable {
		// The contract's transport text ends with advice for agents; a
		// human gets the reason and what to check.
		msg = "no answer from termsprawl: " + transportReason(res) + " (`termsprawl doctor` checks the setup)"
	}
	if h.insideNode && (res.Kind == tools.KindForbidden || res.Kind == tools.KindNotRun || res.Kind == tools.KindUnauthorized) {
		// Inside a node the why comes first: what termsprawl's answer
		// says is about the node's session, not the person typing.
		fmt.Fprintf(h.stderr, "%s: refused: %s\n", h.prefix(), h.inNodeHint())
		fmt.Fprintf(h.stderr, "%s: (the node's session got: %s)\n", h.prefix(), tools.VisibleText(humanize(msg)))
	} else {
		fmt.Fprintf(h.stderr, "%s: %s\n", h.prefix(), tools.VisibleText(humanize(msg)))
	}
	if ambiguous(res) {
		return ExitUsage
	}
	return ExitNo
}

// transportReason is the reason of an unavailable result, without the
// contract's advice for agents.
func transportReason(res tools.Result) string {
	if r, ok := res.Details["reason"].(string); ok && r != "" {
		return strings.TrimRight(r, ".")
	}
	return res.Error
}

// printNotRunning is the one sentence of exit 3.
func (h *human) printNotRunning() {
	fmt.Fprintf(h.stderr, "termsprawl is not running (state dir %s): start it with `termsprawl up`\n", h.stateDir)
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

// mutate calls op and prints its receipt: indented with asJSON, else
// through show with the receipt's result (its zero value when the receipt
// does not decode, so that show falls back on what the user typed).
func mutate[T any](h *human, op string, args map[string]any, asJSON bool, show func(T)) int {
	v, code := h.call(op, args)
	if code != ExitOK {
		return code
	}
	if asJSON {
		printReceipt(h.stdout, v)
		return ExitOK
	}
	var r tools.ReceiptOf[T]
	_ = tools.DecodeValue(v, &r)
	show(r.Result)
	return ExitOK
}

// earlyExit is a launch receipt's result.exited (CONTRACT §10): the
// program ended within a second of its start.
type earlyExit struct {
	ExitCode   int      `json:"exit_code"`
	ScreenTail []string `json:"screen_tail"`
}

// launch runs terminal_launch or agent_launch and prints the new id (or
// the node as JSON). A program that exited right away is exit 1, with its
// exit code and last lines.
func (h *human) launch(op, kind, name, cwd, host string, command []string, asJSON bool) int {
	args := map[string]any{}
	if host != "" {
		// A path on that host: passed as given (default: its home).
		args["host"] = host
		if cwd != "" {
			args["cwd"] = cwd
		}
		return h.launchWith(op, kind, name, command, asJSON, args)
	}
	wd, err := os.Getwd()
	if cwd == "" {
		if err != nil {
			return usageError(h.stderr, h.prefix(), fmt.Errorf("cannot tell the current directory (pass --cwd): %w", err), "")
		}
		cwd = wd
	} else if !filepath.IsAbs(cwd) {
		if err != nil {
			return usageError(h.stderr, h.prefix(), fmt.Errorf("--cwd %s is relative and the current directory is unknown: %w", cwd, err), "")
		}
		cwd = filepath.Join(wd, cwd)
	}
	args["cwd"] = cwd
	return h.launchWith(op, kind, name, command, asJSON, args)
}

// launchWith is launch once the cwd is settled.
func (h *human) launchWith(op, kind, name string, command []string, asJSON bool, args map[string]any) int {
	if kind != "" {
		args["agent"] = kind
	}
	if h.launchPolicy != "" {
		args["policy"] = h.launchPolicy
	}
	if name != "" {
		args["name"] = name
	}
	if len(command) > 0 {
		args["command"] = command
	}
	if h.worktree != nil {
		args["worktree"] = h.worktree
	}
	if h.sandbox != "" {
		args["sandbox"] = h.sandbox
	}
	if len(h.env) > 0 {
		args["env"] = h.env
	}
	v, code := h.call(op, args)
	if code != ExitOK {
		return code
	}
	var rec struct {
		Result json.RawMessage `json:"result"`
	}
	var node struct {
		tools.NodeInfo
		Exited *earlyExit `json:"exited"`
	}
	if err := json.Unmarshal(v, &rec); err != nil || json.Unmarshal(rec.Result, &node) != nil || node.Terminal == "" {
		fmt.Fprintf(h.stderr, "%s: the launch receipt has no node id: %s\n", h.prefix(), clipText(string(v), 200))
		return ExitNo
	}
	id := node.Terminal
	h.launched = id
	if asJSON {
		var pretty any
		_ = json.Unmarshal(rec.Result, &pretty)
		_ = prettyJSON(h.stdout, pretty)
	} else {
		fmt.Fprintln(h.stdout, id)
	}
	if name != "" && id != name {
		h.noteNameTaken(name, id)
	}
	if e := node.Exited; e != nil {
		fmt.Fprintf(h.stderr, "%s: the program of node %s exited right after it started, with exit code %d", h.prefix(), id, e.ExitCode)
		tail := trimBlankTail(e.ScreenTail)
		if len(tail) == 0 {
			// The receipt caught the exit before the last output: the
			// node's screen has it.
			if snap, code := callAs[tools.Snapshot](h, "terminal_snapshot", map[string]any{"terminal": id}); code == ExitOK {
				tail = trimBlankTail(snap.Lines)
			}
		}
		if len(tail) > 10 {
			tail = tail[len(tail)-10:]
		}
		if len(tail) > 0 {
			fmt.Fprintf(h.stderr, "; its last lines:\n")
			for _, l := range tail {
				fmt.Fprintf(h.stderr, "  | %s\n", vis(l))
			}
		} else {
			fmt.Fprintf(h.stderr, " and printed nothing\n")
		}
		fmt.Fprintf(h.stderr, "`termsprawl snapshot %s` shows its screen; `termsprawl kill %s` closes it\n", id, id)
		return ExitNo
	}
	return ExitOK
}

// noteNameTaken says on stderr that name already named another node, so
// the new node is reached by its id.
func (h *human) noteNameTaken(name, id string) {
	l, code := callAs[tools.NodeList](h, "terminal_list", map[string]any{})
	if code != ExitOK {
		return
	}
	var others []string
	for _, r := range l.Terminals {
		if r.Terminal != id && (r.Name == name || r.Terminal == name) {
			others = append(others, r.Terminal)
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(h.stderr, "%s: note: the name %q is already used by node %s; this node's id is %s: use %s to name it\n",
			h.prefix(), name, strings.Join(others, ", "), id, id)
	}
}

// trimBlankTail drops trailing blank lines.
func trimBlankTail(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// callAs runs op and decodes its value as T, the operation's value type.
func callAs[T any](h *human, op string, args map[string]any) (T, int) {
	var out T
	v, code := h.call(op, args)
	if code != ExitOK {
		return out, code
	}
	if err := tools.DecodeValue(v, &out); err != nil {
		fmt.Fprintf(h.stderr, "%s: %v\n", h.prefix(), err)
		return out, ExitNo
	}
	return out, ExitOK
}

func (h *human) listNodes() ([]tools.NodeInfo, int) {
	l, code := callAs[tools.NodeList](h, "terminal_list", map[string]any{})
	return l.Terminals, code
}

// findNode resolves word against terminal_list (for attach and open).
func (h *human) findNode(word string) (tools.NodeInfo, int) {
	rows, code := h.listNodes()
	if code != ExitOK {
		return tools.NodeInfo{}, code
	}
	n, err := resolveNode(rows, word)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: %v\n", h.prefix(), err)
		return tools.NodeInfo{}, nameErrorCode(err)
	}
	return n, ExitOK
}

// statusText is a node's status as ls shows it: "exited (CODE)" for a
// program that ended.
func statusText(r tools.NodeInfo) string {
	status := r.Status
	if r.ExitCode != nil {
		status += fmt.Sprintf(" (%d)", *r.ExitCode)
	}
	return status
}

func (h *human) ls(asJSON bool) int {
	rows, code := h.listNodes()
	if code != ExitOK {
		return code
	}
	if asJSON {
		if rows == nil {
			rows = []tools.NodeInfo{}
		}
		_ = prettyJSON(h.stdout, tools.NodeList{Terminals: rows})
		return ExitOK
	}
	if len(rows) == 0 {
		fmt.Fprintln(h.stdout, "no nodes: `termsprawl new` launches one")
		return ExitOK
	}
	tw := tabwriter.NewWriter(h.stdout, 2, 8, 2, ' ', 0)
	if hasHosts(rows) {
		return h.lsWithHosts(tw, rows)
	}
	fmt.Fprintln(tw, "ID\tNAME\tKIND\tSTATE\tSANDBOX\tCOST\tCOMMAND\tOWNER\tSIZE\tCLIENTS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%dx%d\t%d\n", vis(r.Terminal), dash(r.Name), dash(kindText(r)), dash(stateText(r)), sandboxText(r), costText(r.Usage), dash(clipText(shellJoin(r.Command), 40)), dash(r.Owner), r.Columns, r.Rows, r.Clients)
	}
	_ = tw.Flush()
	return ExitOK
}

// sandboxWords is a node's profile in a sentence: "sandbox workspace",
// "unsandboxed", "an unsandboxed agent".
func sandboxWords(r tools.NodeInfo) string {
	switch t := sandboxText(r); t {
	case "!unsandboxed":
		return "an unsandboxed agent"
	case "unsandboxed":
		return t
	default:
		return "sandbox " + t
	}
}

// sandboxText is a node's sandbox as ls shows it (CONTRACT §27): its
// profile, "unsandboxed" for none, and an unsandboxed agent marked "!"
// so it stands out.
func sandboxText(r tools.NodeInfo) string {
	switch r.Sandbox {
	case "workspace", "guard":
		return r.Sandbox
	}
	if r.Agent != "" {
		return "!unsandboxed"
	}
	return "unsandboxed"
}

// dash is a table cell: "-" for nothing, else s with its controls made
// visible (tools.VisibleLine: a cell is outside text — CONTRACT §26).
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return tools.VisibleLine(s)
}

// vis is tools.VisibleLine: outside text on one line of a human surface.
func vis(s string) string { return tools.VisibleLine(s) }

// clipText is s made visible (tools.VisibleLine), cut to n runes at the
// end with "…". For text whose end matters (a dialog's command), see
// clipMiddle.
func clipText(s string, n int) string {
	s = tools.VisibleLine(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// clipMiddle is s made visible (tools.VisibleLine) and, when longer than
// n runes, cut in the middle with "…" so its end stays shown: the
// dangerous tail of a command (`ls …; rm -rf ~/work`) is never the part
// hidden (CONTRACT §26). cut reports whether anything was left out.
func clipMiddle(s string, n int) (out string, cut bool) {
	v := tools.VisibleLine(s)
	out = cutMiddle(v, n)
	return out, out != v
}

// cutMiddle cuts s to n runes in the middle with "…", keeping a third
// of the room for its start and the rest for its end.
func cutMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := (n - 1) / 3
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// shellJoin quotes argv for display.
func shellJoin(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = shellQuoteArg(a)
	}
	return strings.Join(parts, " ")
}

func (h *human) snapshot(node string, asJSON bool) int {
	v, code := h.call("terminal_snapshot", map[string]any{"terminal": node})
	if code != ExitOK {
		return code
	}
	var snap tools.Snapshot
	if err := tools.DecodeValue(v, &snap); err != nil {
		fmt.Fprintf(h.stderr, "%s: %v\n", h.prefix(), err)
		return ExitNo
	}
	if asJSON {
		var pretty any
		_ = json.Unmarshal(v, &pretty)
		_ = prettyJSON(h.stdout, pretty)
	} else {
		for _, l := range trimBlankTail(snap.Lines) {
			fmt.Fprintln(h.stdout, vis(l))
		}
	}
	if snap.SavedAt != "" {
		fmt.Fprintf(h.stderr, "%s: node %s is %s: this is its last screen, saved at %s; `termsprawl restore %s` starts it again, `termsprawl forget %s` drops it\n", h.prefix(), snap.Terminal, snap.Status, snap.SavedAt, snap.Terminal, snap.Terminal)
	} else if snap.Status == tools.StatusLost {
		fmt.Fprintf(h.stderr, "%s: node %s is lost and no screen of it was saved\n", h.prefix(), snap.Terminal)
	} else if snap.Status == tools.StatusExited {
		code := "an unknown code"
		if snap.ExitCode != nil {
			code = fmt.Sprintf("code %d", *snap.ExitCode)
		}
		fmt.Fprintf(h.stderr, "%s: the program of node %s exited with %s (this is its last screen); `termsprawl kill %s` closes it\n", h.prefix(), snap.Terminal, code, snap.Terminal)
	}
	return ExitOK
}

// attachTerminal says so when this process's input is no terminal (tmux
// would say only "open terminal failed: not a terminal").
func (h *human) attachTerminal(node string) bool {
	if stdinIsTerminal() {
		return true
	}
	fmt.Fprintf(h.stderr, "%s: attach needs a terminal, and this one's input is not one (a pipe, a file or no terminal at all): run it in a terminal; `termsprawl snapshot %s` prints the screen from anywhere\n", h.prefix(), node)
	return false
}

// stdinIsTerminal reports whether this process's input is a terminal
// (tmux attaches only there); tests stub it.
var stdinIsTerminal = func() bool {
	fi, err := os.Stdin.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && fi.Mode()&os.ModeDevice != 0 && !isDevNull(fi)
}

// isDevNull reports whether fi is /dev/null's.
func isDevNull(fi os.FileInfo) bool {
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(fi, null)
}

// execFn replaces the process (tests stub it).
var execFn = syscall.Exec

// attachArgv is the tmux command line of attach: the contract's attach
// argv, -r for read-only, and for a node whose program exited a message
// saying so (the pane itself shows its last screen).
func attachArgv(socket string, n tools.NodeInfo, readOnly bool, detachKey string) []string {
	argv := []string{"tmux", "-L", socket, "attach-session"}
	if readOnly {
		argv = append(argv, "-r")
	}
	argv = append(argv, "-t", "ts-"+n.Terminal)
	if n.Status == tools.StatusExited {
		code := "?"
		if n.ExitCode != nil {
			code = fmt.Sprint(*n.ExitCode)
		}
		msg := fmt.Sprintf("%s exited (code %s). termsprawl kill %s closes it; %s detaches", n.Terminal, code, n.Terminal, detachKey)
		argv = append(argv, ";", "display-message", "-d", "10000", strings.ReplaceAll(msg, "#", "##"))
	}
	return argv
}

func (h *human) attach(word string, readOnly bool) int {
	if h.isDown() {
		return h.attachOffline(word, readOnly) // the tmux fallback (attach_offline.go)
	}
	n, code := h.findNode(word)
	if code != ExitOK {
		return code
	}
	if n.Host != "" {
		return h.attachRemote(n, readOnly)
	}
	if !h.attachTerminal(n.Terminal) {
		return ExitUsage
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: tmux is not on PATH: install tmux (%v)\n", h.prefix(), err)
		return ExitNo
	}
	socket := n.TmuxSocket // the node's shard
	if socket == "" {
		socket = h.socket
		if s, err := tools.ReadSession(h.sessionFile()); err == nil && s.Socket != "" {
			socket = s.Socket // the socket termsprawl runs on
		}
	}
	detach, _ := h.keys()
	return h.execAttach(tmux, attachArgv(socket, n, readOnly, detach))
}

// launchAttach is new --attach when stdout is a terminal: what the launch
// prints (the id, a note on a taken name) is held and printed when the
// attach has given the terminal back. Printed before, it could be lost:
// the tmux client starts with tcflush(TCOFLUSH) on the terminal, and on a
// Linux pty that drops output the reader (the terminal emulator,
// script(1)) has not yet been handed by the kernel's flip-buffer work,
// which under load runs late; tcdrain does not wait for that work, so
// nothing before the exec can. The id then shows right after tmux's
// "[detached (from session ts-ID)]", on a line of its own.
func (h *human) launchAttach(name, cwd, host string, command []string, asJSON bool) int {
	out, errOut := h.stdout, h.stderr
	var heldOut, heldErr bytes.Buffer
	h.stdout, h.stderr = &heldOut, &heldErr
	code := h.launch("terminal_launch", "", name, cwd, host, command, asJSON)
	h.stdout, h.stderr = out, errOut
	printHeld := func() {
		_, _ = out.Write(heldOut.Bytes())
		_, _ = errOut.Write(heldErr.Bytes())
	}
	if code != ExitOK {
		printHeld()
		return code
	}
	h.afterAttach = printHeld
	code = h.attach(h.launched, false)
	if h.afterAttach != nil { // the attach never ran
		h.afterAttach()
		h.afterAttach = nil
	}
	return code
}

// execAttach replaces this process with the attach command argv (tmux, or
// ssh for a host's node). For new --attach on a terminal (h.afterAttach
// set) it runs it as a child instead, prints the held output once it has
// ended, and exits as it did.
func (h *human) execAttach(path string, argv []string) int {
	env := tools.EnvWithoutTmux(os.Environ())
	after := h.afterAttach
	if after == nil {
		err := execFn(path, argv, env)
		fmt.Fprintf(h.stderr, "%s: exec %s: %v\n", h.prefix(), shellJoin(argv), err)
		return ExitNo
	}
	h.afterAttach = nil
	err := runAttachFn(path, argv, env)
	after()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return ee.ExitCode()
	}
	fmt.Fprintf(h.stderr, "%s: run %s: %v\n", h.prefix(), shellJoin(argv), err)
	return ExitNo
}

// runAttachFn runs the attach command as a child on this process's
// terminal (tests stub it).
var runAttachFn = func(path string, argv, env []string) error {
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	return cmd.Run()
}

func (h *human) open(word string) int {
	n, code := h.findNode(word)
	if code != ExitOK {
		return code
	}
	if done, code := h.openInUserTmux(n); done {
		return code // a window of the user's own tmux (open.go)
	}
	return h.simple("terminal_external", map[string]any{"terminal": n.Terminal}, func(json.RawMessage) {
		fmt.Fprintf(h.stdout, "opened a terminal window attached to node %s\n", n.Terminal)
	})
}

func (h *human) dialogs(asJSON bool) int {
	list, code := callAs[tools.DialogList](h, "dialog_list", map[string]any{})
	if code != ExitOK {
		return code
	}
	rows := list.Dialogs
	if asJSON {
		if list.Dialogs == nil {
			list.Dialogs = []tools.Dialog{}
		}
		_ = prettyJSON(h.stdout, list)
		return ExitOK
	}
	if len(rows) == 0 {
		fmt.Fprintln(h.stdout, "no pending dialogs")
		return ExitOK
	}
	tw := tabwriter.NewWriter(h.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNODE\tKIND\tTITLE\tOPTIONS\tDENIED IF UNANSWERED")
	cut := false
	for _, r := range rows {
		ends := "-"
		if !r.Expires.IsZero() {
			ends = "in " + time.Until(r.Expires).Round(time.Second).String()
		}
		title, c := clipMiddle(strings.ReplaceAll(r.Title, "\n", " "), 60)
		cut = cut || c
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", vis(r.ID), dash(r.Node), dash(r.Kind), title, dash(strings.Join(r.Options, " | ")), ends)
	}
	_ = tw.Flush()
	if cut {
		fmt.Fprintln(h.stdout, "a title cut in the middle (…) keeps its start and its end; `termsprawl dialogs --json` shows every dialog's title and tool input in full")
	}
	fmt.Fprintln(h.stdout, "answer with: termsprawl answer ID deny|allow|always [--reason TEXT], a question with: termsprawl answer ID --choice VALUE")
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
