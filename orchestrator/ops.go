package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Size limits a launch or resize accepts: the operation table's.
const (
	MinColumns, MaxColumns = tools.MinColumns, tools.MaxColumns
	MinRows, MaxRows       = tools.MinRows, tools.MaxRows
)

// LaunchSpec is a terminal_launch (or agent_launch) request.
type LaunchSpec struct {
	Command []string          `json:"command,omitempty"`
	Name    string            `json:"name,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	EnvMode string            `json:"env_mode,omitempty"`
	Columns int               `json:"columns,omitempty"`
	Rows    int               `json:"rows,omitempty"`

	Owner  string `json:"-"` // launching node id, or "operator"
	Parent string `json:"-"` // launching node id (agents)
	Agent  string `json:"-"` // agent kind
	// ExtraEnv is added after Env (TERMSPRAWL_* for agents).
	ExtraEnv map[string]string `json:"-"`
}

// NodeInfo is one row of terminal_list.
type NodeInfo struct {
	Terminal string   `json:"terminal"`
	Name     string   `json:"name"`
	Command  []string `json:"command"`
	Owner    string   `json:"owner"`
	Parent   string   `json:"parent,omitempty"`
	Agent    string   `json:"agent,omitempty"`
	Status   string   `json:"status"`
	ExitCode *int     `json:"exit_code,omitempty"`
	Columns  int      `json:"columns"`
	Rows     int      `json:"rows"`
	Revision uint64   `json:"revision"`
	Clients  int      `json:"clients"`
}

// Snapshot is terminal_snapshot's value.
type Snapshot struct {
	Terminal string `json:"terminal"`
	screen.Snapshot
	Status   string `json:"status"`
	ExitCode *int   `json:"exit_code,omitempty"`
}

// InputResult is the result of an input operation.
type InputResult struct {
	Terminal string      `json:"terminal"`
	Revision uint64      `json:"revision"` // the revision just before the input was sent
	Keys     []string    `json:"keys,omitempty"`
	Bytes    int         `json:"bytes,omitempty"`
	Wait     *WaitResult `json:"wait,omitempty"`
}

func usage(format string, a ...any) error { return tools.Errorf(tools.KindUsage, format, a...) }

// checkSize refuses a terminal size outside the accepted range.
func checkSize(columns, rows int) error {
	if columns < MinColumns || columns > MaxColumns || rows < MinRows || rows > MaxRows {
		return usage("size %dx%d is out of range: columns %d..%d, rows %d..%d", columns, rows, MinColumns, MaxColumns, MinRows, MaxRows)
	}
	return nil
}

func defaultShell() string {
	if u, err := user.Current(); err == nil {
		if b, err := os.ReadFile("/etc/passwd"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				f := strings.Split(line, ":")
				if len(f) >= 7 && f[0] == u.Username && f[6] != "" {
					return f[6]
				}
			}
		}
	}
	if s := os.Getenv("SHELL"); s != "" {
		return s
	}
	return "/bin/sh"
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Launch creates a node: its files first (so TERMSPRAWL_SESSION_FILE is
// valid before the program starts), then the tmux session, then the
// control client and the seeded mirror.
func (o *Orchestrator) Launch(ctx context.Context, spec LaunchSpec) (NodeInfo, error) {
	if len(spec.Command) == 0 {
		spec.Command = []string{defaultShell()}
	}
	if spec.Command[0] == "" {
		return NodeInfo{}, usage("command[0] is empty: give the program to run, e.g. [\"bash\"]")
	}
	if spec.Columns == 0 {
		spec.Columns = DefaultColumns
	}
	if spec.Rows == 0 {
		spec.Rows = DefaultRows
	}
	if err := checkSize(spec.Columns, spec.Rows); err != nil {
		return NodeInfo{}, err
	}
	if spec.Cwd == "" {
		if h, err := os.UserHomeDir(); err == nil {
			spec.Cwd = h
		} else {
			spec.Cwd = "/"
		}
	}
	if !filepath.IsAbs(spec.Cwd) {
		return NodeInfo{}, usage("cwd %q is not an absolute path", spec.Cwd)
	}
	if fi, err := os.Stat(spec.Cwd); err != nil || !fi.IsDir() {
		return NodeInfo{}, usage("cwd %q does not exist or is not a directory", spec.Cwd)
	}
	switch spec.EnvMode {
	case "", "replace", "inherit":
	default:
		return NodeInfo{}, usage("env_mode %q: use replace or inherit", spec.EnvMode)
	}
	for k := range spec.Env {
		if !envNameRE.MatchString(k) {
			return NodeInfo{}, usage("env name %q is not a valid variable name", k)
		}
	}
	if spec.Owner == "" {
		spec.Owner = tools.OperatorNode
	}

	o.lifecycleMu.Lock()
	defer o.lifecycleMu.Unlock()
	if err := o.srv.ensure(ctx); err != nil {
		return NodeInfo{}, tools.Errorf(tools.KindUnavailable, "the private tmux server is not reachable: %v", err)
	}
	o.mu.Lock()
	count, closing := len(o.nodes), o.closing
	o.mu.Unlock()
	if closing {
		return NodeInfo{}, tools.Errorf(tools.KindUnavailable, "the orchestrator is shutting down")
	}
	if count >= o.cfg.MaxNodes {
		return NodeInfo{}, tools.Errorf(tools.KindRejected, "node limit reached (%d): close terminals with terminal_close first", o.cfg.MaxNodes)
	}
	id := o.allocateID(spec.Name)
	name := spec.Name
	if name == "" {
		name = id
	}
	meta := NodeMeta{ID: id, Name: name, Command: spec.Command, Cwd: spec.Cwd, Owner: spec.Owner,
		Parent: spec.Parent, Agent: spec.Agent, Created: time.Now().UTC()}
	if err := tools.WriteJSONAtomic(o.metaPath(id), meta); err != nil {
		return NodeInfo{}, fmt.Errorf("write node metadata: %w", err)
	}
	if err := o.writeSessionFile(meta); err != nil {
		o.removeFiles(id)
		return NodeInfo{}, err
	}

	env := o.launchEnv(spec, id)
	args := []string{"new-session", "-d", "-s", "ts-" + id, "-x", strconv.Itoa(spec.Columns), "-y", strconv.Itoa(spec.Rows), "-c", spec.Cwd}
	for _, kv := range env {
		args = append(args, "-e", kv)
	}
	args = append(args, "--")
	argv := spec.Command
	if len(argv) == 1 {
		// One argument would go through the shell: exec it via env so it
		// runs verbatim, with no shell interpretation.
		argv = []string{"env", "--", argv[0]}
	}
	args = append(args, argv...)
	create := func() error {
		_, err := o.srv.adminClient().RunMany(ctx,
			tmuxctl.Command(args[0], args[1:]...),
			tmuxctl.Command("set-option", "-t", "=ts-"+id+":", "@termsprawl_node", id))
		return err
	}
	err := create()
	if errors.Is(err, tmuxctl.ErrClosed) {
		// The server died under us (its death may not have been seen
		// yet when ensure ran): start a new one and try once more.
		if err = o.srv.ensure(ctx); err == nil {
			err = create()
		}
	}
	if err != nil {
		o.removeFiles(id)
		o.srv.adminClient().Run(context.Background(), tmuxctl.Command("kill-session", "-t", "=ts-"+id))
		return NodeInfo{}, fmt.Errorf("create tmux session for %s: %w", id, err)
	}
	n := o.newNode(meta)
	if err := n.attach(ctx); err != nil {
		o.removeFiles(id)
		o.srv.adminClient().Run(context.Background(), tmuxctl.Command("kill-session", "-t", "=ts-"+id))
		return NodeInfo{}, err
	}
	o.mu.Lock()
	o.nodes[id] = n
	o.mu.Unlock()
	o.log.Info("launched node", "node", id, "command", spec.Command[0], "owner", spec.Owner)
	return n.info(0), nil
}

// launchEnv builds the -e list: the minimal or inherited environment, the
// launch's env, then TERMSPRAWL_*.
func (o *Orchestrator) launchEnv(spec LaunchSpec, id string) []string {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	if spec.EnvMode == "inherit" {
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			if k == "TMUX" || k == "TMUX_PANE" || k == "TERM" || strings.HasPrefix(k, "TERMSPRAWL_") || !envNameRE.MatchString(k) {
				continue
			}
			set(k, v)
		}
	} else {
		for _, kv := range minimalEnv() {
			k, v, _ := strings.Cut(kv, "=")
			if k == "TERM" {
				continue // tmux sets TERM to its default-terminal
			}
			set(k, v)
		}
	}
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		set(k, spec.Env[k])
	}
	set("TERMSPRAWL_SESSION_FILE", tools.SessionPath(o.cfg.StateDir, id))
	set("TERMSPRAWL_NODE", id)
	set("TERMSPRAWL_HOME", o.cfg.StateDir)
	set("TERMSPRAWL_TMUX_SOCKET", o.cfg.Socket)
	if o.cfg.CtlPath != "" {
		set("TERMSPRAWL_CTL", o.cfg.CtlPath)
	}
	for k, v := range spec.ExtraEnv {
		set(k, v)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}

func (n *node) info(clients int) NodeInfo {
	status, code, _ := n.state()
	snap := n.snapshot()
	return NodeInfo{Terminal: n.meta.ID, Name: n.meta.Name, Command: n.meta.Command, Owner: n.meta.Owner,
		Parent: n.meta.Parent, Agent: n.meta.Agent, Status: status, ExitCode: code,
		Columns: snap.Columns, Rows: snap.Rows, Revision: snap.Revision, Clients: clients}
}

// humanClients counts attached clients per session, control clients
// (ours) excluded, and returns their tty names per session.
func (o *Orchestrator) humanClients(ctx context.Context) map[string][]string {
	out, err := o.srv.adminClient().Run(ctx, tmuxctl.Command("list-clients", "-F", "#{session_name} #{client_control_mode} #{client_name}"))
	res := map[string][]string{}
	if err != nil {
		return res
	}
	for _, line := range out {
		f := strings.SplitN(line, " ", 3)
		if len(f) == 3 && f[1] != "1" {
			res[f[0]] = append(res[f[0]], f[2])
		}
	}
	return res
}

// List returns every node.
func (o *Orchestrator) List(ctx context.Context) []NodeInfo {
	clients := o.humanClients(ctx)
	nodes := o.sortedNodes()
	out := make([]NodeInfo, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.info(len(clients[n.session()])))
	}
	return out
}

// Info returns one node's row.
func (o *Orchestrator) Info(ctx context.Context, id string) (NodeInfo, error) {
	n, err := o.lookup(id)
	if err != nil {
		return NodeInfo{}, err
	}
	return n.info(len(o.humanClients(ctx)[n.session()])), nil
}

// Owner returns the node's owner and parent, for permission checks.
func (o *Orchestrator) Owner(id string) (owner string, ok bool) {
	n := o.node(id)
	if n == nil {
		return "", false
	}
	return n.meta.Owner, true
}

// Snapshot returns the node's screen.
func (o *Orchestrator) Snapshot(id string) (Snapshot, error) {
	n, err := o.lookup(id)
	if err != nil {
		return Snapshot{}, err
	}
	n.observe(context.Background())
	status, code, _ := n.state()
	return Snapshot{Terminal: id, Snapshot: n.snapshot(), Status: status, ExitCode: code}, nil
}

// CaptureSince returns the rows changed after revision cursor.
func (o *Orchestrator) CaptureSince(id string, cursor uint64) (screen.Changes, error) {
	n, err := o.lookup(id)
	if err != nil {
		return screen.Changes{}, err
	}
	n.observe(context.Background())
	ch, err := n.scr.ChangesSince(cursor)
	if err != nil {
		if isTruncated(err) {
			return ch, tools.Errorf(tools.KindConflict, "history-truncated: revision %d of %q is older than the kept history; call terminal_snapshot and continue from its revision", cursor, id).
				WithDetails("reason", "history-truncated")
		}
		return ch, usage("cursor %d: %v", cursor, err)
	}
	return ch, nil
}

// ReadResult is terminal_read's value.
type ReadResult struct {
	Terminal  string `json:"terminal"`
	Text      string `json:"text"`
	Revision  uint64 `json:"revision"`
	Truncated bool   `json:"truncated"`
}

// DefaultReadChars is terminal_read's default max_chars.
const DefaultReadChars = tools.DefaultReadChars

// Read returns the most recent output (history and screen, from tmux).
func (o *Orchestrator) Read(ctx context.Context, id string, maxChars int) (ReadResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return ReadResult{}, err
	}
	if maxChars <= 0 {
		maxChars = DefaultReadChars
	}
	rev := n.scr.Revision()
	lines, err := n.client.Run(ctx, tmuxctl.Command("capture-pane", "-p", "-J", "-S", "-2000", "-t", n.pane))
	if err != nil {
		return ReadResult{}, n.tmuxErr("read", err)
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	text := strings.Join(lines, "\n")
	r := []rune(text)
	res := ReadResult{Terminal: id, Revision: rev}
	if len(r) > maxChars {
		r = r[len(r)-maxChars:]
		res.Truncated = true
	}
	res.Text = string(r)
	return res, nil
}

// ScrollbackLine is one line of terminal_scrollback.
type ScrollbackLine struct {
	Line int    `json:"line"` // tmux's numbering: 0 is the top visible row, negative is history
	Text string `json:"text"`
}

// ScrollbackResult is terminal_scrollback's value.
type ScrollbackResult struct {
	Terminal    string           `json:"terminal"`
	From, To    int              `json:"-"`
	HistorySize int              `json:"history_size"`
	Lines       []ScrollbackLine `json:"lines"`
	Truncated   bool             `json:"truncated"`
}

// MaxScrollbackLines bounds terminal_scrollback's answer (the newest lines
// are kept).
const MaxScrollbackLines = 2000

// Scrollback reads lines from tmux's history and screen. from and to use
// tmux's numbering (0 = first visible row, negative = history); nil means
// the start of history and the last visible row.
func (o *Orchestrator) Scrollback(ctx context.Context, id string, from, to *int, search string) (ScrollbackResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return ScrollbackResult{}, err
	}
	out, err := n.client.Run(ctx, tmuxctl.Command("display-message", "-p", "-t", n.pane, "#{history_size} #{pane_height}"))
	if err != nil || len(out) != 1 {
		return ScrollbackResult{}, n.tmuxErr("scrollback", err)
	}
	var hist, height int
	fmt.Sscanf(out[0], "%d %d", &hist, &height)
	start, end := -hist, height-1
	if from != nil {
		start = max(*from, -hist)
	}
	if to != nil {
		end = min(*to, height-1)
	}
	if from != nil && to != nil && *from > *to {
		return ScrollbackResult{}, usage("from %d is after to %d (history has %d lines, the screen %d rows)", *from, *to, hist, height)
	}
	res := ScrollbackResult{Terminal: id, HistorySize: hist, Lines: []ScrollbackLine{}}
	if start > end {
		return res, nil // the range holds no line (e.g. no history yet)
	}
	lines, err := n.client.Run(ctx, tmuxctl.Command("capture-pane", "-p", "-S", strconv.Itoa(start), "-E", strconv.Itoa(end), "-t", n.pane))
	if err != nil {
		return ScrollbackResult{}, n.tmuxErr("scrollback", err)
	}
	for i, l := range lines {
		l = strings.TrimRight(l, " ")
		if search != "" && !strings.Contains(l, search) {
			continue
		}
		res.Lines = append(res.Lines, ScrollbackLine{Line: start + i, Text: l})
	}
	if len(res.Lines) > MaxScrollbackLines {
		res.Lines = res.Lines[len(res.Lines)-MaxScrollbackLines:]
		res.Truncated = true
	}
	return res, nil
}

func (n *node) tmuxErr(op string, err error) error {
	if _, _, gone := n.state(); gone {
		return tools.Errorf(tools.KindNotFound, "terminal %q is gone (its tmux session ended)", n.meta.ID)
	}
	if err == nil {
		err = fmt.Errorf("unexpected reply")
	}
	return tools.Errorf(tools.KindUnavailable, "%s on %q: %v", op, n.meta.ID, err)
}

// WaitFor waits on a node.
func (o *Orchestrator) WaitFor(ctx context.Context, id string, spec WaitSpec) (WaitResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return WaitResult{}, err
	}
	r, err := n.waitFor(ctx, spec)
	if err != nil {
		return r, err
	}
	if r.TimedOut {
		return r, timeoutError(id, r)
	}
	return r, nil
}

// sendInput runs the tmux commands of an input operation, then the
// optional wait with the revision before the input as its baseline.
func (o *Orchestrator) sendInput(ctx context.Context, id string, text string, wait *WaitSpec, send func(n *node) error) (InputResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return InputResult{}, err
	}
	var c compiled
	if wait != nil {
		if wait.After != nil {
			return InputResult{}, usage("an input operation's wait takes no \"after\": its baseline is the revision before the input")
		}
		if c, err = compileWait(*wait); err != nil {
			return InputResult{}, err
		}
	}
	if status, _, gone := n.state(); gone || status == StatusExited {
		return InputResult{}, tools.Errorf(tools.KindNotRun, "terminal %q has exited; nothing was sent", id)
	}
	n.observe(ctx)
	rev := n.scr.Revision()
	n.recordInput(rev, text)
	if err := send(n); err != nil {
		return InputResult{Terminal: id, Revision: rev}, err
	}
	res := InputResult{Terminal: id, Revision: rev}
	if wait != nil {
		c.After = &rev
		w, err := n.waitCompiled(ctx, c)
		if err != nil && w.Wait == "" {
			return res, err
		}
		res.Wait = &w
	}
	return res, nil
}

// Type sends literal text as keystrokes.
func (o *Orchestrator) Type(ctx context.Context, id, text string, wait *WaitSpec) (InputResult, error) {
	if text == "" {
		return InputResult{}, usage("text is empty: nothing to type")
	}
	r, err := o.sendInput(ctx, id, text, wait, func(n *node) error { return n.typeText(ctx, text) })
	r.Bytes = len(text)
	return r, err
}

func (n *node) typeText(ctx context.Context, text string) error {
	if _, err := n.client.Run(ctx, tmuxctl.Command("send-keys", "-t", n.pane, "-l", "--", text)); err != nil {
		return n.tmuxErr("type", err)
	}
	return nil
}

// Press sends key chords.
func (o *Orchestrator) Press(ctx context.Context, id, keys string, wait *WaitSpec) (InputResult, error) {
	parsed, err := ParseKeys(keys)
	if err != nil {
		return InputResult{}, usage("%v", err)
	}
	r, err := o.sendInput(ctx, id, "", wait, func(n *node) error { return n.pressKeys(ctx, parsed) })
	r.Keys = parsed
	return r, err
}

func (n *node) pressKeys(ctx context.Context, keys []string) error {
	args := append([]string{"-t", n.pane}, keys...)
	if _, err := n.client.Run(ctx, tmuxctl.Command("send-keys", args...)); err != nil {
		return n.tmuxErr("press", err)
	}
	return nil
}

// Paste pastes text, bracketed when the program enabled bracketed paste.
func (o *Orchestrator) Paste(ctx context.Context, id, text string, wait *WaitSpec) (InputResult, error) {
	if text == "" {
		return InputResult{}, usage("text is empty: nothing to paste")
	}
	r, err := o.sendInput(ctx, id, text, wait, func(n *node) error { return n.pasteText(ctx, text) })
	r.Bytes = len(text)
	return r, err
}

func (n *node) pasteText(ctx context.Context, text string) error {
	buf := "termsprawl-paste-" + n.meta.ID
	// -p brackets only if the program asked for it; -d deletes the buffer.
	_, err := n.client.RunMany(ctx,
		tmuxctl.Command("set-buffer", "-b", buf, "--", text),
		tmuxctl.Command("paste-buffer", "-p", "-d", "-b", buf, "-t", n.pane))
	if err != nil {
		return n.tmuxErr("paste", err)
	}
	return nil
}

// Submit settle times: Enter is pressed only after the program took the
// text (its screen stayed unchanged for submitQuiet) and at least
// submitMinDelay after the text was sent (TUIs such as Claude Code and
// Codex swallow an Enter that arrives within ~100 ms of a paste), and at
// most submitMaxDelay after it.
const (
	submitMinDelay = 150 * time.Millisecond
	submitQuiet    = 50 * time.Millisecond
	submitMaxDelay = 2 * time.Second
)

// Submit types (or, for multi-line text, pastes) the text, lets the
// program take it, then presses Enter exactly once.
func (o *Orchestrator) Submit(ctx context.Context, id, text string, wait *WaitSpec) (InputResult, error) {
	r, err := o.sendInput(ctx, id, text, wait, func(n *node) error {
		if text != "" {
			var err error
			if strings.ContainsAny(text, "\n\r") {
				err = n.pasteText(ctx, text)
			} else {
				err = n.typeText(ctx, text)
			}
			if err != nil {
				return err
			}
			n.settle(ctx)
		}
		return n.pressKeys(ctx, []string{"Enter"})
	})
	r.Bytes = len(text)
	return r, err
}

// settle waits until the screen has been quiet for submitQuiet, and at
// least submitMinDelay has passed, bounded by submitMaxDelay.
func (n *node) settle(ctx context.Context) {
	start := time.Now()
	hard := time.NewTimer(submitMaxDelay)
	defer hard.Stop()
	for {
		_, changed := n.scr.WaitState()
		wait := submitQuiet
		if rest := submitMinDelay - time.Since(start); rest > wait {
			wait = rest
		}
		t := time.NewTimer(wait)
		select {
		case <-changed:
			t.Stop()
			continue
		case <-t.C:
			if time.Since(start) >= submitMinDelay {
				return
			}
		case <-hard.C:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// Interrupt presses Ctrl+C.
func (o *Orchestrator) Interrupt(ctx context.Context, id string, wait *WaitSpec) (InputResult, error) {
	r, err := o.sendInput(ctx, id, "", wait, func(n *node) error { return n.pressKeys(ctx, []string{"C-c"}) })
	r.Keys = []string{"C-c"}
	return r, err
}

// Resize sets the node's window size; the mirror follows tmux's layout
// change and reseeds. It returns once the mirror has the new size (or
// after a short bound).
func (o *Orchestrator) Resize(ctx context.Context, id string, columns, rows int) (Snapshot, error) {
	if err := checkSize(columns, rows); err != nil {
		return Snapshot{}, err
	}
	n, err := o.lookup(id)
	if err != nil {
		return Snapshot{}, err
	}
	if _, err := n.client.Run(ctx, tmuxctl.Command("resize-window", "-t", "="+n.session()+":", "-x", strconv.Itoa(columns), "-y", strconv.Itoa(rows))); err != nil {
		return Snapshot{}, n.tmuxErr("resize", err)
	}
	deadline := time.NewTimer(2 * time.Second)
	defer deadline.Stop()
	for {
		_, changed := n.scr.WaitState()
		if s := n.snapshot(); s.Columns == columns && s.Rows == rows {
			break
		}
		select {
		case <-changed:
			continue
		case <-deadline.C:
		case <-ctx.Done():
		}
		break
	}
	return o.Snapshot(id)
}

var signals = map[string]syscall.Signal{"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "KILL": syscall.SIGKILL, "HUP": syscall.SIGHUP}

// Signal sends a signal to the node's program (its process group).
func (o *Orchestrator) Signal(id, sig string) (map[string]any, error) {
	s, ok := signals[strings.ToUpper(strings.TrimPrefix(strings.ToUpper(sig), "SIG"))]
	if !ok {
		return nil, usage("unknown signal %q: use INT, TERM, KILL or HUP", sig)
	}
	n, err := o.lookup(id)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	pid := n.pid
	n.mu.Unlock()
	if status, _, _ := n.state(); status == StatusExited || pid <= 0 {
		return nil, tools.Errorf(tools.KindNotRun, "terminal %q has no running program to signal", id)
	}
	// The pane's program leads its own process group (tmux made it a
	// session leader): signal the group, falling back to the process.
	if err := syscall.Kill(-pid, s); err != nil {
		if err := syscall.Kill(pid, s); err != nil {
			return nil, tools.Errorf(tools.KindRejected, "signal %s to pid %d: %v", sig, pid, err)
		}
	}
	return map[string]any{"terminal": id, "signal": strings.ToUpper(sig), "pid": pid}, nil
}

// CloseNode ends the node's program and tmux session and removes its
// files (its token dies with it).
//
// tmux 3.3a crashes (a segfault in its control-mode output path) when
// kill-session destroys a live pane while other panes are busy sending
// output to control clients; measured in TestConcurrentNodes. So a live
// node is closed the way tmux closes sessions every day: remain-on-exit is
// turned off for its pane, its program's process group is signalled, and
// tmux destroys the pane and the session itself. Our own control client detaches first. The program
// gets SIGHUP first (as when a terminal closes) and SIGKILL after
// closeGrace. kill-session is used only for a pane that is already
// dead, or if the session outlives closeTimeout.
func (o *Orchestrator) CloseNode(ctx context.Context, id string) error {
	// One lifecycle change at a time: tmux 3.3a crashed when a session
	// was destroyed while another was being created or attached.
	o.lifecycleMu.Lock()
	defer o.lifecycleMu.Unlock()
	n, err := o.lookup(id)
	if err != nil {
		return err
	}
	n.mu.Lock()
	pid := n.pid
	n.mu.Unlock()
	status, _, gone := n.state()
	live := !gone && status != StatusExited && pid > 0
	if live {
		if _, err := n.client.Run(ctx, tmuxctl.Command("set-option", "-p", "-t", n.pane, "remain-on-exit", "off")); err != nil {
			live = false
		}
	}
	// Our client leaves first: tmux 3.3a also crashed when the pane died
	// with our control client still attached.
	clientPid := n.client.PID()
	n.client.SetPaneOutput(ctx, n.pane, false)
	n.detach()
	o.waitClientGone(ctx, clientPid)
	ended := !live
	// Hang up like a closing terminal; kill what ignores that.
	for _, step := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGHUP, closeGrace}, {syscall.SIGKILL, closeTimeout}} {
		if ended {
			break
		}
		syscall.Kill(-pid, step.sig)
		syscall.Kill(pid, step.sig)
		ended = o.waitSessionGone(ctx, n.session(), step.wait)
	}
	if _, err := o.srv.adminClient().Run(ctx, tmuxctl.Command("kill-session", "-t", "="+n.session())); err != nil && !ended {
		o.log.Debug("kill-session", "node", id, "err", err)
	}
	n.markGone()
	o.mu.Lock()
	delete(o.nodes, id)
	o.mu.Unlock()
	o.removeFiles(id)
	o.log.Info("closed node", "node", id)
	return nil
}

// waitClientGone waits (checking every closePoll, for at most closeGrace)
// until the tmux server no longer lists the control client with process
// id pid: the client process can exit before the server has let go of
// its state, and a pane destroyed in between crashes tmux 3.3a.
func (o *Orchestrator) waitClientGone(ctx context.Context, pid int) {
	want := strconv.Itoa(pid)
	deadline := time.Now().Add(closeGrace)
	for {
		out, err := o.srv.adminClient().Run(ctx, tmuxctl.Command("list-clients", "-F", "#{client_pid}"))
		if err != nil || !slices.Contains(out, want) || time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		time.Sleep(closePoll)
	}
}

// waitSessionGone checks every closePoll, for at most d, whether tmux has
// ended the session. (Nothing of ours is attached to it any more to be
// told, and this runs only while a terminal is being closed.)
func (o *Orchestrator) waitSessionGone(ctx context.Context, session string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if _, err := o.srv.adminClient().Run(ctx, tmuxctl.Command("has-session", "-t", "="+session)); err != nil {
			var ce *tmuxctl.CommandError
			return errors.As(err, &ce) // "can't find session": gone
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(closePoll)
	}
}

// CloseNode's waits: how long a program may take to exit after SIGHUP
// before it gets SIGKILL, and how long tmux may then take to end the
// session before CloseNode kills the session itself.
const (
	closeGrace   = time.Second
	closeTimeout = 5 * time.Second
	closePoll    = 20 * time.Millisecond
)

// Focus switches every human client attached to this server to the node.
func (o *Orchestrator) Focus(ctx context.Context, id string) (map[string]any, error) {
	n, err := o.lookup(id)
	if err != nil {
		return nil, err
	}
	var switched []string
	for _, names := range o.humanClients(ctx) {
		for _, c := range names {
			if _, err := o.srv.adminClient().Run(ctx, tmuxctl.Command("switch-client", "-c", c, "-t", "="+n.session())); err == nil {
				switched = append(switched, c)
			}
		}
	}
	res := map[string]any{"terminal": id, "clients": len(switched)}
	if len(switched) == 0 {
		res["hint"] = "no human is attached to this server: use terminal_external or `termsprawl attach " + id + "`"
	}
	return res, nil
}

// AttachArgv is the command that attaches a terminal to the node.
func (o *Orchestrator) AttachArgv(id string) []string {
	return []string{o.cfg.Tmux, "-L", o.cfg.Socket, "attach-session", "-t", "ts-" + id}
}

// knownEmulators is tried in order when no preference is set.
var knownEmulators = [][]string{
	{"x-terminal-emulator", "-e"}, {"kitty", "--"}, {"alacritty", "-e"},
	{"gnome-terminal", "--"}, {"konsole", "-e"}, {"xterm", "-e"},
}

// ExternalArgv returns the emulator argv that attaches to the node, from
// the preferences file or the first known emulator on PATH.
func (o *Orchestrator) ExternalArgv(id string) ([]string, error) {
	attach := o.AttachArgv(id)
	prefPath := tools.PreferencesPath(o.cfg.StateDir)
	prefs, err := tools.ReadPreferences(prefPath)
	if err == nil {
		return prefs.Argv(attach), nil
	}
	if !os.IsNotExist(err) && !strings.Contains(err.Error(), "no such file") {
		return nil, usage("%s: %v", prefPath, err)
	}
	for _, e := range knownEmulators {
		if p, err := exec.LookPath(e[0]); err == nil {
			return append(append([]string{p}, e[1:]...), attach...), nil
		}
	}
	return nil, tools.Errorf(tools.KindNotRun,
		"no terminal emulator found (tried x-terminal-emulator, kitty, alacritty, gnome-terminal, konsole, xterm; none set in %s): run `termsprawl attach %s` in a terminal instead", prefPath, id)
}

// External opens a new terminal window attached to the node: spawned
// detached, stdio ignored, TMUX and TMUX_PANE removed.
func (o *Orchestrator) External(id string) (map[string]any, error) {
	if _, err := o.lookup(id); err != nil {
		return nil, err
	}
	argv, err := o.ExternalArgv(id)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = tools.EnvWithoutTmux(os.Environ())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, tools.Errorf(tools.KindRejected, "start %s: %v: run `termsprawl attach %s` in a terminal instead", argv[0], err, id)
	}
	go cmd.Wait() // reap it whenever it ends
	return map[string]any{"terminal": id, "argv": argv, "pid": cmd.Process.Pid}, nil
}
