package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

// dashCmd is `termsprawl dash` (and `termsprawl` alone on a terminal):
// the dashboard of CONTRACT §19 (package cli/dash).
type dashCmd struct {
	Session string `name:"session" placeholder:"PATH" help:"Session file to act with (default: the operator's, <state>/sessions/operator.json, also inside a node). A node's own session is refused: an agent's token cannot answer for a human."`
}

func (dashCmd) Examples() string {
	return `termsprawl                                 # on a terminal: the dashboard
termsprawl dash                            # the same, by name
NO_COLOR=1 termsprawl dash                 # attributes only, no colours`
}

// DashParams is what the dashboard runs with (cli/dash.Options and
// RunConfig, which cli does not import: cmd/termsprawl plugs the dashboard
// in with UseDashboard, so termsprawlctl, which links cli, never links
// Bubble Tea).
type DashParams struct {
	Session string // the operator's session file
	Call    func(ctx context.Context, op string, args map[string]any) tools.Result
	Attach  func(n tools.NodeInfo) (*exec.Cmd, error)
	Self    string // the node the dashboard runs in ("" none)
	NoColor bool
	// DetachKey and AnswerKey are the attached clients' keys (config.toml
	// [keys]), named in the help.
	DetachKey, AnswerKey string
	// Trust approves the .termsprawl/ files of dir's repository at their
	// current content (termsprawl trust) and says what it approved.
	Trust func(dir string) (string, error)
}

// dashRun runs the dashboard until the human quits; nil in termsprawlctl.
// An error matching tools.ErrNotRunning means no orchestrator answered.
var dashRun func(ctx context.Context, p DashParams) error

// UseDashboard plugs the dashboard in (cmd/termsprawl: cli/dash.Run).
func UseDashboard(run func(ctx context.Context, p DashParams) error) { dashRun = run }

// onTerminal tells whether stdin and stdout are terminals (tests replace it).
var onTerminal = func() bool { return isTerminal(os.Stdin) && isTerminal(os.Stdout) }

// dashArgs turns no arguments on a terminal into `dash`; without a
// terminal they stay none (help, as before).
func dashArgs(args []string) []string {
	if len(args) == 0 && onTerminal() {
		return []string{"dash"}
	}
	return args
}

// dashTrust is the dashboard's approval of a repository's setup and
// policy (its launch form's "trust setup"): refused inside a node, as
// termsprawl trust is.
func (h *human) dashTrust(dir string) (string, error) {
	if h.insideNode {
		return "", errors.New("approving a repository's setup and policy is the human's: " + h.inNodeHint())
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory: give the repository's directory", vis(dir))
	}
	root, got, err := h.approveRepo(dir)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(got))
	for _, a := range got {
		names = append(names, a.Name)
	}
	return fmt.Sprintf("approved %s of %s at their current content", strings.Join(names, " and "), vis(root)), nil
}

// dash runs the dashboard as the operator.
func (h *human) dash(c dashCmd) int {
	session := tools.OperatorSessionPath(h.stateDir) // also inside a node (CONTRACT §10)
	if c.Session != "" {
		s, err := tools.ReadSession(c.Session)
		if err != nil {
			return usageError(h.stderr, h.prefix(), fmt.Errorf("--session: %w", err), "")
		}
		if s.Role != tools.RoleOperator {
			fmt.Fprintf(h.stderr, "%s: %s is node %s's own session (role %s): an agent's token cannot watch and answer for a human. Run termsprawl dash without --session: it uses the operator's session %s, also inside a node (CONTRACT §10)\n",
				h.prefix(), c.Session, s.Node, s.Role, h.sessionFile())
			return ExitUsage
		}
		session = c.Session
	}
	if _, err := os.Stat(session); err != nil {
		h.printNotRunning()
		return ExitNotRunning
	}
	if dashRun == nil {
		fmt.Fprintf(h.stderr, "%s: this binary has no dashboard: run termsprawl dash\n", h.prefix())
		return ExitUsage
	}
	if !onTerminal() {
		fmt.Fprintf(h.stderr, "%s: the dashboard needs a terminal (stdin and stdout); termsprawl ls, dialogs and answer work without one\n", h.prefix())
		return ExitUsage
	}
	self := ""
	if s, err := tools.ReadSession(os.Getenv(SessionEnv)); err == nil && s.Role != tools.RoleOperator {
		self = s.Node // the node this dashboard runs in
	}
	_, noColor := os.LookupEnv("NO_COLOR")
	p := DashParams{Session: session,
		Call: func(ctx context.Context, op string, args map[string]any) tools.Result {
			raw, err := h.prepareQuiet(op, args)
			if err != nil {
				return tools.ErrResult(err)
			}
			return tools.Call(ctx, session, tools.Request{Operation: op, Args: raw}, tools.CallOptions{})
		},
		Attach:  h.attachExec,
		Self:    self,
		NoColor: noColor && os.Getenv("NO_COLOR") != "",
	}
	p.DetachKey, p.AnswerKey = h.keys()
	p.Trust = h.dashTrust
	err := dashRun(h.ctx, p)
	switch {
	case errors.Is(err, tools.ErrNotRunning):
		h.printNotRunning()
		return ExitNotRunning
	case err != nil:
		fmt.Fprintf(h.stderr, "%s: %v\n", h.prefix(), err)
		return ExitNo
	}
	return ExitOK
}

// prepareQuiet validates an operation's args against the table and
// returns the error instead of printing it.
func (h *human) prepareQuiet(op string, args map[string]any) ([]byte, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, tools.Errorf(tools.KindUsage, "%s: %w", op, err)
	}
	_, raw, err = validateCall(op, raw)
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// attachExec is the command that attaches this terminal to node n, as
// `termsprawl attach` does (tmux of the node's shard, or ssh to its
// host; TMUX removed, so it works inside tmux too), for the dashboard's
// enter: it runs as a child and the dashboard comes back when it ends.
func (h *human) attachExec(n tools.NodeInfo) (*exec.Cmd, error) {
	env := tools.EnvWithoutTmux(os.Environ())
	if n.Host != "" {
		hosts, err := tools.ReadHosts(h.stateDir)
		if err != nil {
			return nil, err
		}
		for _, spec := range hosts {
			if spec.Name == n.Host {
				ssh, err := exec.LookPath("ssh")
				if err != nil {
					return nil, fmt.Errorf("ssh is not on PATH: install openssh-client (%w)", err)
				}
				argv := tools.HostAttachArgv(spec, "ts-"+n.Terminal, false)
				return &exec.Cmd{Path: ssh, Args: argv, Env: env}, nil
			}
		}
		return nil, fmt.Errorf("node %s is on host %s, which is not in %s", n.Terminal, n.Host, tools.HostsPath(h.stateDir))
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		return nil, fmt.Errorf("tmux is not on PATH: install tmux (%w)", err)
	}
	socket := n.TmuxSocket
	if socket == "" {
		socket = h.socket
		if s, err := tools.ReadSession(h.sessionFile()); err == nil && s.Socket != "" {
			socket = s.Socket
		}
	}
	return &exec.Cmd{Path: tmux, Args: attachArgv(socket, n, false, detachKey(h)), Env: env}, nil
}
