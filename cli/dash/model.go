// Package dash is termsprawl's dashboard (CONTRACT §19): a full-screen
// Bubble Tea program a human runs the fleet from. It is a client of the
// tool server only (package tools: the event stream and Call, with the
// operator's session), never of the engine.
//
// The Model is driven by three inputs: the terminal's keys and mouse
// (Bubble Tea), the event stream (tools.Events: node rows, dialogs and
// the shown node's changed rows) and the replies of the calls it makes.
// It spawns no tmux process; `enter` runs the attach command it is given
// (Options.Attach) through tea.ExecProcess.
package dash

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/termsprawl/termsprawl/tools"
)

// Least terminal for the preview.
const (
	MinWidth  = 80
	MinHeight = 24
)

// Options is what a Model runs with.
type Options struct {
	// Events is the event stream (tools.Events.C()); Show switches the
	// node it shows.
	Events <-chan tools.StreamEvent
	Show   func(id string)
	// Call runs one operation as the operator.
	Call func(ctx context.Context, op string, args map[string]any) tools.Result
	// Attach returns the command that attaches this terminal to node n
	// (the CLI's attach: inside or outside tmux, any shard or host).
	Attach func(n tools.NodeInfo) (*exec.Cmd, error)
	// Self is the node the dashboard runs in ("" none): its row is marked.
	Self string
	// NoColor: NO_COLOR is set; attributes only, no colours.
	NoColor bool
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
	// DetachKey and AnswerKey are the keys of an attached client
	// (config.toml [keys]; "": the defaults), named in the help.
	DetachKey, AnswerKey string
	// Trust approves the .termsprawl/ files (worktree.json's setup,
	// policy.toml) of dir's repository at their current content, the
	// human's act (CONTRACT §26), and says what it approved; nil: the
	// launch form offers no approval.
	Trust func(dir string) (string, error)
}

// The preview's tabs.
const (
	tabScreen = iota
	tabDialogs
	tabRecording
	tabLogs
	// tabDiff is the worktree diff (CONTRACT §21; diff.go).
	tabDiff
	numTabs
)

var tabNames = [numTabs]string{"screen", "dialogs", "recording", "logs", "diff"}

// Modes of the input line.
type mode int

const (
	modeNormal mode = iota
	modeFocus
	modeFilter
	modeReason
	modeChoice
	modeConfirmClose
	modeLaunch
	modeHelp
	modeSearchPrompt // search.go
	modeSearch
)

// screenState is the shown node's screen, as the stream sends it.
type screenState struct {
	node   string
	rev    uint64
	cols   int
	rows   int
	cursor tools.StreamCursor
	lines  map[int][]tools.StreamRun
	at     time.Time // when the last screen event was read
}

// Model is the dashboard.
type Model struct {
	opts Options
	ctx  context.Context

	width, height int

	nodes   []tools.StreamNode
	dialogs []tools.StreamDialog
	asking  map[string]bool    // nodes with a pending dialog
	rows    []tools.StreamNode // sorted and filtered: what the list shows
	sel     string             // the selected node's id
	offset  int                // the list's first shown row
	screen  screenState

	connected bool   // a frame arrived since the last break
	everUp    bool   // a frame ever arrived
	downWhy   string // why the stream is down (while !connected)

	mode mode
	tab  int
	// decisionsAsked is the node whose recent decisions were last asked
	// for (the dialogs tab, view.go).
	decisionsAsked string
	filter         string
	input          lineInput
	launch         [numLaunchFields]lineInput // kind, name, directory, worktree, command
	launchAt       int
	// launching: the launch call is out; launchErr is its refusal, shown
	// in the form (which stays open).
	launching bool
	launchErr string
	diff      diffState           // the diff tab (diff.go)
	search    searchState         // s: the search and its results (search.go)
	pending   *tools.StreamDialog // the dialog being answered (reason, choice)
	focused   string              // the node focus mode types into
	closing   string              // the node x asks about
	message   string              // the status line
	tabText   []string            // the dialogs/recording/logs tab's lines
	tabFor    string              // the node tabText is of
	// next is a command a call's then asked to run after it (later).
	next tea.Cmd
	// pendingSelect is a node just launched: selected once it is listed.
	pendingSelect string

	sender chan inputReq // focus mode's keys, in order
	inbox  chan tea.Msg  // replies of the sender
	quit   bool
}

// inputReq is one input call of focus mode.
type inputReq struct {
	node string
	op   string
	args map[string]any
}

// Messages.
type (
	streamMsg tools.StreamEvent
	streamEnd struct{}
	resultMsg struct {
		what string
		res  tools.Result
		then func(m *Model, res tools.Result) // optional, on the model's goroutine
	}
	inputFailed struct {
		node string
		res  tools.Result
	}
	attachDone struct{ err error }
	// inspectMsg runs on the program's goroutine (tests read the model).
	inspectMsg func(*Model)
	tickMsg    time.Time
)

// New returns the dashboard's model.
func New(ctx context.Context, opts Options) *Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Model{opts: opts, ctx: ctx, width: MinWidth, height: MinHeight, inbox: make(chan tea.Msg, 16)}
	m.launch[fieldKind].Prompt, m.launch[fieldName].Prompt, m.launch[fieldDir].Prompt, m.launch[fieldWorktree].Prompt, m.launch[fieldCommand].Prompt = "kind: ", "name: ", "directory: ", "worktree: ", "command: "
	m.launch[fieldWorktree].Placeholder = WorktreeHint
	m.launch[fieldTrust].Prompt, m.launch[fieldTrust].Placeholder = "trust setup: ", TrustHint
	m.launch[fieldCommand].Placeholder = CommandHint
	return m
}

// Init starts reading the stream.
func (m *Model) Init() tea.Cmd { return tea.Batch(m.listen(), tick()) }

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// listen waits for the next stream event or sender reply.
func (m *Model) listen() tea.Cmd {
	events, inbox := m.opts.Events, m.inbox
	return func() tea.Msg {
		select {
		case ev, ok := <-events:
			if !ok {
				return streamEnd{}
			}
			return streamMsg(ev)
		case msg := <-inbox:
			return msg
		}
	}
}

// Selected is the selected node's id ("" none).
func (m *Model) Selected() string { return m.sel }

// Focused is the node focus mode types into ("" not in focus mode).
func (m *Model) Focused() string {
	if m.mode != modeFocus {
		return ""
	}
	return m.focused
}

// Message is the status line.
func (m *Model) Message() string { return m.message }

// Connected reports whether the stream is up.
func (m *Model) Connected() bool { return m.connected }

// Rows are the list's node ids, in order.
func (m *Model) Rows() []string {
	out := make([]string, len(m.rows))
	for i, r := range m.rows {
		out[i] = r.Terminal
	}
	return out
}

func (m *Model) node(id string) (tools.StreamNode, bool) {
	for _, n := range m.nodes {
		if n.Terminal == id {
			return n, true
		}
	}
	return tools.StreamNode{}, false
}

// WorktreeHint is the launch form's worktree field's placeholder: empty
// launches without a worktree, NAME on branch termsprawl/NAME, + with an
// automatic name.
const WorktreeHint = "empty: none · NAME: branch termsprawl/NAME · +: automatic name"

// TrustHint is the launch form's trust field's placeholder.
const TrustHint = "y: approve the repository's .termsprawl/ setup and policy as they are now"

// CommandHint is the launch form's command field's placeholder.
const CommandHint = "empty: the shell or the agent's own · custom needs one"

// The launch form's fields, in order.
const (
	fieldKind = iota
	fieldName
	fieldDir
	fieldWorktree
	fieldTrust
	fieldCommand
	numLaunchFields
)

// LaunchKinds are the launch form's kinds, in the order ←/→ cycles them.
var LaunchKinds = []string{tools.KindShell, "claude", "codex", "gemini", "opencode", "custom"}

// cycleKind moves the kind field d steps through LaunchKinds.
func (m *Model) cycleKind(d int) {
	i := slices.Index(LaunchKinds, m.launch[fieldKind].Value())
	i = ((i+d)%len(LaunchKinds) + len(LaunchKinds)) % len(LaunchKinds)
	m.launch[fieldKind].SetValue(LaunchKinds[i])
}

// kindByLetter picks the next kind after the current one that starts
// with letter (c: claude, codex, custom in turn).
func (m *Model) kindByLetter(letter string) {
	cur := slices.Index(LaunchKinds, m.launch[fieldKind].Value())
	for d := 1; d <= len(LaunchKinds); d++ {
		k := LaunchKinds[(cur+d)%len(LaunchKinds)]
		if strings.HasPrefix(k, strings.ToLower(letter)) {
			m.launch[fieldKind].SetValue(k)
			return
		}
	}
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := m.update(msg)
	// The diff tab follows the selection (diff.go).
	if m.tab == tabDiff && m.sel != "" && m.diff.node != m.sel {
		cmd = tea.Batch(cmd, m.loadDiff())
	}
	// So does the dialogs tab's list of recent decisions (view.go).
	if m.tab == tabDialogs && m.sel != "" && m.decisionsAsked != m.sel {
		cmd = tea.Batch(cmd, m.loadDecisions(m.sel))
	}
	return m, cmd
}

func (m *Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.keepVisible()
		return m, nil
	case streamMsg:
		return m, tea.Batch(m.listen(), m.onStream(tools.StreamEvent(msg)))
	case streamEnd:
		m.connected = false
		m.downWhy = "the event stream ended"
		return m, nil
	case tickMsg:
		return m, tick() // redraws the "since" column
	case inspectMsg:
		msg(m) // tests: read the model on its own goroutine
		return m, nil
	case resultMsg:
		if msg.then != nil {
			msg.then(m, msg.res)
		} else if msg.res.OK {
			m.message = msg.what
		} else {
			m.message = failText(msg.what, msg.res)
		}
		next := m.next
		m.next = nil
		return m, next
	case inputFailed:
		if m.mode == modeFocus && m.focused == msg.node {
			if _, live := m.node(msg.node); !live || msg.res.Kind == tools.KindNotFound {
				m.endFocus(fmt.Sprintf("node %s was closed: focus ended", msg.node))
			} else {
				m.message = failText("typing into "+msg.node, msg.res)
			}
		}
		return m, m.listen()
	case attachDone:
		if msg.err != nil {
			m.message = "attach: " + msg.err.Error()
		} else {
			m.message = "detached: back in the dashboard"
		}
		return m, nil
	case tea.PasteMsg:
		return m, m.onPaste(msg.Content)
	case tea.MouseClickMsg:
		return m, m.onClick(msg.Mouse())
	case tea.MouseWheelMsg:
		me := msg.Mouse()
		if g := m.geometry(); m.tab == tabDiff && !g.small && me.X >= g.px {
			switch me.Button { // the wheel over the diff scrolls it
			case tea.MouseWheelUp:
				m.scrollDiff(-3)
			case tea.MouseWheelDown:
				m.scrollDiff(3)
			}
			return m, nil
		}
		switch me.Button {
		case tea.MouseWheelUp:
			m.move(-1)
		case tea.MouseWheelDown:
			m.move(1)
		}
		return m, nil
	case tea.KeyPressMsg:
		return m, m.onKey(msg)
	}
	return m, nil
}

// onStream applies one stream event; its command re-fetches the diff
// tab when the shown node changed.
func (m *Model) onStream(ev tools.StreamEvent) tea.Cmd {
	switch {
	case ev.Down:
		m.connected = false
		m.downWhy = "termsprawl is not answering"
		if ev.Err != nil {
			m.downWhy = ev.Err.Error()
		}
		if ev.NotRunning {
			m.downWhy = "termsprawl is not running (start it with `termsprawl up`)"
		}
	case ev.Frame != nil:
		m.connected, m.everUp = true, true
		cmd := m.setState(ev.Frame.State)
		m.screen = screenState{node: ev.Frame.Show}
		if ev.Frame.Screen != nil {
			m.applyScreen(ev.Frame.Screen, ev.At)
		}
		if ev.Frame.Show != m.sel && m.opts.Show != nil {
			m.opts.Show(m.sel) // the selection moved while connecting
		}
		return cmd
	case ev.State != nil:
		return m.setState(*ev.State)
	case ev.Screen != nil:
		if ev.Screen.Node == m.sel {
			m.applyScreen(ev.Screen, ev.At)
		}
	}
	return nil
}

func (m *Model) applyScreen(s *tools.StreamScreen, at time.Time) {
	if s.Full || m.screen.node != s.Node || m.screen.lines == nil {
		m.screen = screenState{node: s.Node, lines: map[int][]tools.StreamRun{}}
	}
	if k := s.Scroll; k > 0 && !s.Full {
		for y := range m.screen.rows {
			if r, ok := m.screen.lines[y+k]; ok && y+k < m.screen.rows {
				m.screen.lines[y] = r
			} else {
				delete(m.screen.lines, y)
			}
		}
	}
	m.screen.rev, m.screen.cols, m.screen.rows, m.screen.cursor, m.screen.at = s.Rev, s.Cols, s.Rows, s.Cursor, at
	for _, l := range s.Lines {
		m.screen.lines[l.Y] = l.R
	}
}

// ScreenText is the shown screen as plain text (tests).
func (m *Model) ScreenText() string {
	var b strings.Builder
	for y := range m.screen.rows {
		for _, r := range m.screen.lines[y] {
			b.WriteString(r.T)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// ScreenAt is when the shown screen last changed (read off the wire).
func (m *Model) ScreenAt() time.Time { return m.screen.at }

// setState takes a new reading of the rows and dialogs.
func (m *Model) setState(st tools.StreamState) tea.Cmd {
	before, had := m.node(m.sel)
	m.nodes, m.dialogs = st.Nodes, st.Dialogs
	m.asking = map[string]bool{}
	for _, d := range m.dialogs {
		m.asking[d.Node] = true
	}
	m.resort()
	if m.pendingSelect != "" && slices.ContainsFunc(m.rows, func(n tools.StreamNode) bool { return n.Terminal == m.pendingSelect }) {
		m.selectNode(m.pendingSelect)
		m.pendingSelect = ""
		m.keepVisible()
	}
	if m.mode == modeFocus {
		if _, live := m.node(m.focused); !live {
			m.endFocus(fmt.Sprintf("node %s was closed: focus ended", m.focused))
		}
	}
	if m.mode == modeConfirmClose {
		if _, live := m.node(m.closing); !live {
			m.mode, m.message = modeNormal, fmt.Sprintf("node %s is gone", m.closing)
		}
	}
	if m.pending != nil && (m.mode == modeReason || m.mode == modeChoice) {
		if !slices.ContainsFunc(m.dialogs, func(d tools.StreamDialog) bool { return d.ID == m.pending.ID }) {
			m.message = fmt.Sprintf("dialog %s was already answered elsewhere (or timed out)", m.pending.ID)
			m.mode, m.pending = modeNormal, nil
		}
	}
	// The shown node's turn ended or its worktree changed: its diff again.
	if after, ok := m.node(m.sel); ok && had && m.tab == tabDiff && m.diff.node == m.sel && diffChanged(before, after) {
		return m.loadDiff()
	}
	return nil
}

// group orders the list: needs a human, working, idle, shells, exited.
func (m *Model) group(n tools.StreamNode) int {
	st := state(n)
	switch {
	case n.Status == tools.StatusExited || st == tools.AgentExited:
		return 4
	case m.needsHuman(n):
		return 0
	case n.Agent == "" && (n.Kind == "" || n.Kind == tools.KindShell):
		return 3
	case st == tools.AgentWorking || st == tools.AgentStarting:
		return 1
	}
	return 2
}

// needsHuman: the agent says so (CONTRACT §20), or a dialog of the node
// waits for an answer.
func (m *Model) needsHuman(n tools.StreamNode) bool {
	return n.NeedsHuman || (n.AgentState != nil && n.AgentState.NeedsHuman) || m.asking[n.Terminal]
}

// state is a node's state word: the agent's, else the process status.
func state(n tools.StreamNode) string {
	if n.AgentState != nil && n.AgentState.State != "" && n.Status != tools.StatusExited {
		return n.AgentState.State
	}
	if n.State != "" {
		return n.State
	}
	return n.Status
}

func kind(n tools.StreamNode) string {
	switch {
	case n.Kind != "":
		return n.Kind
	case n.Agent != "":
		return n.Agent
	}
	return tools.KindShell
}

// sandboxMark goes before a node's kind (CONTRACT §27): "!" for an agent
// running unsandboxed (it stands out), "◇" for the guard profile, nothing
// for workspace and for the human's own unsandboxed shells.
func sandboxMark(n tools.StreamNode) string {
	switch {
	case n.Sandbox == "guard":
		return "◇"
	case n.Agent != "" && n.Sandbox == "none":
		return "!"
	}
	return ""
}

// name is the node's name or id as shown (tools.VisibleLine: a name is
// outside text, CONTRACT §26).
func name(n tools.StreamNode) string {
	if n.Name != "" {
		return tools.VisibleLine(n.Name)
	}
	return n.Terminal
}

// resort rebuilds the list from the rows and the filter and keeps the
// selection on its node when it is still listed.
func (m *Model) resort() {
	rows := make([]tools.StreamNode, 0, len(m.nodes))
	f := strings.ToLower(m.filter)
	for _, n := range m.nodes {
		if f != "" && !strings.Contains(strings.ToLower(name(n)), f) && !strings.Contains(strings.ToLower(n.Terminal), f) &&
			!strings.Contains(strings.ToLower(kind(n)), f) && !strings.Contains(strings.ToLower(state(n)), f) &&
			(n.Worktree == nil || !strings.Contains(strings.ToLower(n.Worktree.Branch), f)) {
			continue
		}
		rows = append(rows, n)
	}
	slices.SortStableFunc(rows, func(a, b tools.StreamNode) int {
		if d := m.group(a) - m.group(b); d != 0 {
			return d
		}
		if c := strings.Compare(name(a), name(b)); c != 0 {
			return c
		}
		return strings.Compare(a.Terminal, b.Terminal)
	})
	m.rows = rows
	if !slices.ContainsFunc(rows, func(n tools.StreamNode) bool { return n.Terminal == m.sel }) {
		next := ""
		if len(rows) > 0 {
			next = rows[min(m.selIndexHint(), len(rows)-1)].Terminal
		}
		m.selectNode(next)
	}
	m.keepVisible()
}

// selIndexHint is where the selection was (the row of a node that left).
func (m *Model) selIndexHint() int { return max(m.offset, 0) }

func (m *Model) selIndex() int {
	return slices.IndexFunc(m.rows, func(n tools.StreamNode) bool { return n.Terminal == m.sel })
}

func (m *Model) selectNode(id string) {
	if id == m.sel {
		return
	}
	m.sel = id
	m.screen = screenState{node: id}
	m.tabText, m.tabFor = nil, ""
	m.diff = diffState{seq: m.diff.seq}
	if m.opts.Show != nil {
		m.opts.Show(id)
	}
}

func (m *Model) move(d int) {
	if len(m.rows) == 0 {
		return
	}
	i := m.selIndex() + d
	i = max(0, min(i, len(m.rows)-1))
	m.selectNode(m.rows[i].Terminal)
	m.keepVisible()
}

// listHeight is how many rows the list shows.
func (m *Model) listHeight() int { return max(m.height-3, 1) }

func (m *Model) keepVisible() {
	i := m.selIndex()
	h := m.listHeight()
	if i < 0 {
		m.offset = 0
		return
	}
	if i < m.offset {
		m.offset = i
	}
	if i >= m.offset+h {
		m.offset = i - h + 1
	}
	m.offset = max(0, min(m.offset, max(len(m.rows)-h, 0)))
}

// oldestDialog is the selected node's oldest pending dialog.
func (m *Model) oldestDialog() *tools.StreamDialog {
	var best *tools.StreamDialog
	for i := range m.dialogs {
		d := &m.dialogs[i]
		if d.Node != m.sel {
			continue
		}
		if best == nil || d.Created.Before(best.Created) {
			best = d
		}
	}
	return best
}

func (m *Model) call(what, op string, args map[string]any, then func(*Model, tools.Result)) tea.Cmd {
	call, ctx := m.opts.Call, m.ctx
	return func() tea.Msg {
		return resultMsg{what: what, res: call(ctx, op, args), then: then}
	}
}

// later runs cmd once the current call's then has returned.
func (m *Model) later(cmd tea.Cmd) { m.next = tea.Batch(m.next, cmd) }

// failText is one line for a failed call.
func failText(what string, res tools.Result) string {
	msg := res.Error
	if res.Kind == tools.KindUnavailable {
		msg = "termsprawl is not answering (reconnecting)"
	}
	return what + ": " + tools.VisibleLine(msg)
}

// answer answers dialog d.
func (m *Model) answer(d tools.StreamDialog, mode, selection, reason string) tea.Cmd {
	args := map[string]any{"dialog": d.ID, "mode": mode, "surface": "dashboard"}
	if selection != "" {
		args["selection"] = selection
	}
	if reason != "" {
		args["reason"] = reason
	}
	label := mode
	if selection != "" {
		label = "chose " + selection
	}
	return m.call("", "dialog_answer", args, func(m *Model, res tools.Result) {
		switch {
		case res.OK:
			m.message = fmt.Sprintf("answered %s: %s", d.ID, label)
		case res.Kind == tools.KindConflict || res.Kind == tools.KindNotFound:
			m.message = fmt.Sprintf("dialog %s was already answered elsewhere or ended: %s", d.ID, res.Error)
		default:
			m.message = failText("answer "+d.ID, res)
		}
	})
}

// onKey handles a key in the current mode.
func (m *Model) onKey(k tea.KeyPressMsg) tea.Cmd {
	key := k.String()
	switch m.mode {
	case modeHelp:
		m.mode = modeNormal
		return nil
	case modeFocus:
		if key == "ctrl+]" {
			m.endFocus("focus ended: keys go to the dashboard again")
			return nil
		}
		m.sendKey(k)
		return nil
	case modeFilter:
		switch key {
		case "enter":
			m.mode = modeNormal
			return nil
		case "esc":
			m.mode, m.filter = modeNormal, ""
			m.resort()
			return nil
		}
		m.input.update(k)
		m.filter = m.input.Value()
		m.resort()
		return nil
	case modeReason:
		switch key {
		case "enter":
			d := *m.pending
			m.mode, m.pending = modeNormal, nil
			return m.answer(d, tools.AnswerDeny, "", strings.TrimSpace(m.input.Value()))
		case "esc":
			m.mode, m.pending, m.message = modeNormal, nil, "deny cancelled"
			return nil
		}
		m.input.update(k)
		return nil
	case modeChoice:
		if key == "esc" {
			m.mode, m.pending, m.message = modeNormal, nil, "answer cancelled"
			return nil
		}
		if key == "d" {
			d := *m.pending
			m.mode, m.pending = modeNormal, nil
			return m.answer(d, tools.AnswerDeny, "", "")
		}
		if len(key) == 1 && key[0] >= '1' && key[0] <= '9' {
			i := int(key[0] - '1')
			if i < len(m.pending.Options) {
				d := *m.pending
				m.mode, m.pending = modeNormal, nil
				return m.answer(d, tools.AnswerAllow, d.Options[i], "")
			}
		}
		return nil
	case modeConfirmClose:
		id := m.closing
		m.mode = modeNormal
		if key == "y" || key == "Y" {
			return m.call("closed "+id, "terminal_close", map[string]any{"terminal": id}, nil)
		}
		m.message = "close cancelled"
		return nil
	case modeLaunch:
		return m.launchKey(k)
	case modeSearchPrompt, modeSearch:
		return m.searchKey(k)
	}

	switch key {
	case "q", "ctrl+c":
		m.quit = true
		return tea.Quit
	case "?":
		m.mode = modeHelp
	case "j", "down":
		m.move(1)
	case "k", "up":
		m.move(-1)
	case "g", "home":
		m.move(-len(m.rows))
	case "G", "end":
		m.move(len(m.rows))
	case "tab":
		m.tab = (m.tab + 1) % numTabs
		return m.loadTab()
	case "shift+tab":
		m.tab = (m.tab + numTabs - 1) % numTabs
		return m.loadTab()
	case "u":
		return m.loadTab() // the logs or the diff again
	case "pgdown", "pgup":
		if m.tab == tabDiff {
			page := max(m.geometry().ph-3, 1)
			if key == "pgup" {
				page = -page
			}
			m.scrollDiff(page)
		}
	case "s":
		return m.startSearch()
	case "/":
		m.mode = modeFilter
		m.input.Prompt, m.input.Placeholder = "filter: ", "name, kind or state"
		m.input.SetValue(m.filter)
		return m.input.Focus()
	case "esc":
		if m.filter != "" {
			m.filter = ""
			m.resort()
		}
	case "i":
		if n, ok := m.node(m.sel); ok && n.Status != tools.StatusExited {
			m.mode, m.focused = modeFocus, m.sel
			m.message = fmt.Sprintf("focus: keys go to %s until C-]", name(n))
			m.startSender()
		} else if ok {
			m.message = fmt.Sprintf("node %s has exited: nothing to type into", m.sel)
		}
	case "enter":
		return m.attach()
	case "a", "A", "d":
		d := m.oldestDialog()
		if d == nil {
			m.message = "no pending dialog on this node"
			return nil
		}
		if len(d.Options) > 0 && key != "d" {
			m.mode, m.pending = modeChoice, d
			return nil
		}
		switch key {
		case "a":
			return m.answer(*d, tools.AnswerAllow, "", "")
		case "A":
			return m.answer(*d, tools.AnswerAlways, "", "")
		}
		m.mode, m.pending = modeReason, d
		m.input.Prompt, m.input.Placeholder = "deny "+d.ID+", reason: ", "the agent is told (enter: send, esc: cancel)"
		m.input.SetValue("")
		return m.input.Focus()
	case "n":
		m.mode, m.launchAt, m.launchErr, m.launching = modeLaunch, 0, "", false
		for i := range m.launch {
			m.launch[i].SetValue("")
			m.launch[i].Blur()
		}
		m.launch[fieldKind].SetValue(tools.KindShell)
		return m.launch[fieldKind].Focus()
	case "x":
		if m.sel != "" {
			m.mode, m.closing = modeConfirmClose, m.sel
		}
	case "r":
		if n, ok := m.node(m.sel); ok {
			on := n.Recording == nil
			what := "recording " + n.Terminal
			if !on {
				what = "stopped recording " + n.Terminal
			}
			return m.call(what, "terminal_record", map[string]any{"terminal": n.Terminal, "on": on}, nil)
		}
	}
	return nil
}

func (m *Model) endFocus(msg string) {
	m.mode, m.focused, m.message = modeNormal, "", msg
	if m.sender != nil {
		close(m.sender)
		m.sender = nil
	}
}

// startSender starts the goroutine that sends focus mode's input, one
// call at a time, in the order the keys came.
func (m *Model) startSender() {
	if m.sender != nil {
		return
	}
	ch := make(chan inputReq, 256)
	m.sender = ch
	call, ctx, inbox := m.opts.Call, m.ctx, m.inbox
	go func() {
		for r := range ch {
			res := call(ctx, r.op, r.args)
			if !res.OK {
				select {
				case inbox <- inputFailed{node: r.node, res: res}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
}

func (m *Model) send(op string, args map[string]any) {
	if m.sender == nil {
		return
	}
	args["terminal"] = m.focused
	select {
	case m.sender <- inputReq{node: m.focused, op: op, args: args}:
	default:
		m.message = "typing faster than termsprawl takes it: a key was dropped"
	}
}

func (m *Model) onPaste(text string) tea.Cmd {
	switch m.mode {
	case modeFocus:
		m.send("terminal_paste", map[string]any{"text": text})
	case modeFilter, modeReason:
		m.input.insert(text)
		if m.mode == modeFilter {
			m.filter = m.input.Value()
			m.resort()
		}
	case modeLaunch:
		if m.launchAt != fieldKind { // the kind is chosen, not typed
			m.launch[m.launchAt].insert(text)
		}
	}
	return nil
}

// sendKey sends one key of focus mode: text as terminal_type, the rest
// as a terminal_press chord.
func (m *Model) sendKey(k tea.KeyPressMsg) {
	if k.Text != "" && k.Mod&(tea.ModCtrl|tea.ModAlt|tea.ModMeta|tea.ModSuper) == 0 {
		m.send("terminal_type", map[string]any{"text": k.Text})
		return
	}
	if chord := Chord(tea.Key(k)); chord != "" {
		m.send("terminal_press", map[string]any{"keys": chord})
	}
}

// Chord is terminal_press's name for a key ("" for none it knows).
func Chord(k tea.Key) string {
	var base string
	switch k.Code {
	case tea.KeyEnter:
		base = "Enter"
	case tea.KeyTab:
		base = "Tab"
		if k.Mod&tea.ModShift != 0 {
			return "BTab"
		}
	case tea.KeyBackspace:
		base = "BSpace"
	case tea.KeyEscape:
		base = "Escape"
	case tea.KeyUp:
		base = "Up"
	case tea.KeyDown:
		base = "Down"
	case tea.KeyLeft:
		base = "Left"
	case tea.KeyRight:
		base = "Right"
	case tea.KeyHome:
		base = "Home"
	case tea.KeyEnd:
		base = "End"
	case tea.KeyPgUp:
		base = "PageUp"
	case tea.KeyPgDown:
		base = "PageDown"
	case tea.KeyDelete:
		base = "DC"
	case tea.KeyInsert:
		base = "IC"
	case tea.KeySpace:
		base = "Space"
	default:
		switch {
		case k.Code >= tea.KeyF1 && k.Code <= tea.KeyF12:
			base = fmt.Sprintf("F%d", k.Code-tea.KeyF1+1)
		case k.Code > ' ' && k.Code < 0x7f:
			base = string(k.Code)
		default:
			return ""
		}
	}
	prefix := ""
	if k.Mod&tea.ModCtrl != 0 {
		prefix += "C-"
	}
	if k.Mod&(tea.ModAlt|tea.ModMeta) != 0 {
		prefix += "M-"
	}
	if k.Mod&tea.ModShift != 0 && len(base) > 1 {
		prefix += "S-"
	}
	return prefix + base
}

// attach runs the attach command of the selected node and comes back
// when it ends (the human detached).
func (m *Model) attach() tea.Cmd {
	n, ok := m.node(m.sel)
	if !ok {
		return nil
	}
	if m.opts.Attach == nil {
		m.message = "attach is not available here"
		return nil
	}
	cmd, err := m.opts.Attach(n.NodeInfo)
	if err != nil {
		m.message = "attach: " + err.Error()
		return nil
	}
	return tea.ExecProcess(cmd, func(err error) tea.Msg { return attachDone{err: err} })
}

// launchKey edits the launch form: tab moves, enter launches, esc cancels.
func (m *Model) launchKey(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "esc":
		m.mode, m.message, m.launching = modeNormal, "launch cancelled", false
		return nil
	case "tab", "down", "shift+tab", "up":
		m.launch[m.launchAt].Blur()
		d := 1
		if s := k.String(); s == "shift+tab" || s == "up" {
			d = len(m.launch) - 1
		}
		m.launchAt = (m.launchAt + d) % len(m.launch)
		return m.launch[m.launchAt].Focus()
	case "enter":
		if m.launchAt < len(m.launch)-1 {
			m.launch[m.launchAt].Blur()
			m.launchAt++
			return m.launch[m.launchAt].Focus()
		}
		if m.launching {
			return nil // one launch at a time
		}
		kindWord := strings.TrimSpace(m.launch[fieldKind].Value())
		args := map[string]any{}
		if v := strings.TrimSpace(m.launch[fieldName].Value()); v != "" {
			args["name"] = v
		}
		if v := strings.TrimSpace(m.launch[fieldDir].Value()); v != "" {
			args["cwd"] = v
		}
		if v := strings.Fields(m.launch[fieldCommand].Value()); len(v) > 0 {
			args["command"] = v
		}
		switch v := strings.TrimSpace(m.launch[fieldWorktree].Value()); v {
		case "":
		case "+":
			args["worktree"] = map[string]any{}
		default:
			args["worktree"] = map[string]any{"branch": v}
		}
		if kindWord == "custom" && args["command"] == nil {
			m.launchErr = "a custom agent needs a command: type its program and arguments in the command field"
			return nil
		}
		approved := ""
		switch strings.ToLower(strings.TrimSpace(m.launch[fieldTrust].Value())) {
		case "", "n", "no":
		case "y", "yes":
			// The human's approval, here and now, before the launch (as
			// --trust-setup): the launch's worktree then runs its setup.
			dir, _ := args["cwd"].(string)
			switch {
			case m.opts.Trust == nil:
				m.launchErr = "this dashboard cannot approve: run termsprawl trust DIR in a shell"
				return nil
			case dir == "":
				m.launchErr = "trust setup needs the repository: type its directory in the directory field"
				return nil
			}
			said, err := m.opts.Trust(dir)
			if err != nil {
				m.launchErr = "not approved: " + err.Error()
				return nil
			}
			approved = " · " + said
		default:
			m.launchErr = "trust setup is y or empty: y approves the repository's .termsprawl/ files as they are now"
			return nil
		}
		op := "terminal_launch"
		if kindWord != "" && kindWord != tools.KindShell {
			op, args["agent"] = "agent_launch", kindWord
		}
		m.launching, m.launchErr = true, ""
		return m.call("", op, args, func(m *Model, res tools.Result) {
			m.launching = false
			if !res.OK {
				// The form stays open with the refusal: fix a field, enter again.
				m.launchErr = failText("launch refused", res)
				if m.mode != modeLaunch {
					m.message = m.launchErr
				}
				return
			}
			if m.mode == modeLaunch {
				m.mode = modeNormal
			}
			var r tools.ReceiptOf[tools.NodeInfo]
			if tools.DecodeValue(res.Value, &r) == nil && r.Result.Terminal != "" {
				m.message = "launched " + r.Result.Terminal + approved
				if _, listed := m.node(r.Result.Terminal); listed {
					m.selectNode(r.Result.Terminal) // the stream was first
				} else {
					m.pendingSelect = r.Result.Terminal
				}
				return
			}
			m.message = "launched" + approved
		})
	}
	if m.launchAt == fieldKind {
		// The kind is one of LaunchKinds: ←/→ (or space) cycle, a
		// letter picks the next kind starting with it.
		switch k.String() {
		case "left":
			m.cycleKind(-1)
		case "right", "space":
			m.cycleKind(1)
		default:
			if k.Text != "" && k.Mod == 0 {
				m.kindByLetter(k.Text)
			}
		}
		return nil
	}
	m.launch[m.launchAt].update(k)
	return nil
}
