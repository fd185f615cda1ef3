package dash

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// call is one operation the model made.
type call struct {
	op   string
	args map[string]any
}

// fake is the model's world: the stream it reads and the calls it makes.
type fake struct {
	t      *testing.T
	events chan tools.StreamEvent
	calls  chan call
	mu     sync.Mutex
	reply  func(call) tools.Result
	shows  chan string
	trust  func(dir string) (string, error) // Options.Trust (nil: none)
}

func newFake(t *testing.T) *fake {
	return &fake{t: t, events: make(chan tools.StreamEvent, 64), calls: make(chan call, 256), shows: make(chan string, 256)}
}

func (f *fake) options() Options {
	return Options{
		Events: f.events,
		Show:   func(id string) { f.shows <- id },
		Call: func(_ context.Context, op string, args map[string]any) tools.Result {
			c := call{op: op, args: args}
			f.calls <- c
			f.mu.Lock()
			reply := f.reply
			f.mu.Unlock()
			if reply != nil {
				return reply(c)
			}
			return tools.OKResult(json.RawMessage(`{}`))
		},
		Now:   func() time.Time { return time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC) },
		Trust: f.trust,
	}
}

func (f *fake) setReply(r func(call) tools.Result) {
	f.mu.Lock()
	f.reply = r
	f.mu.Unlock()
}

// nextCall waits for the model's next call of op (others are skipped).
func (f *fake) nextCall(op string) call {
	f.t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		select {
		case c := <-f.calls:
			if c.op == op {
				return c
			}
		case <-timer.C:
			f.t.Fatalf("no %s call", op)
		}
	}
}

func (f *fake) noCall() {
	f.t.Helper()
	select {
	case c := <-f.calls:
		f.t.Fatalf("unexpected call %s %v", c.op, c.args)
	default:
	}
}

func agent(id, st string, needs bool) tools.StreamNode {
	return tools.StreamNode{NodeInfo: tools.NodeInfo{Terminal: id, Name: id, Status: tools.StatusRunning, Agent: "claude", Kind: "claude"},
		AgentState: &tools.StreamAgent{State: st, NeedsHuman: needs}}
}

func shell(id string) tools.StreamNode {
	return tools.StreamNode{NodeInfo: tools.NodeInfo{Terminal: id, Name: id, Status: tools.StatusRunning, Kind: tools.KindShell}}
}

func fleet() tools.StreamState {
	exited := shell("e1")
	exited.Status = tools.StatusExited
	return tools.StreamState{Nodes: []tools.StreamNode{shell("s1"), exited, agent("i1", tools.AgentIdle, false),
		agent("w1", tools.AgentWorking, false), agent("n1", tools.AgentWaiting, true)}}
}

func screen(node string, lines ...string) *tools.StreamScreen {
	s := &tools.StreamScreen{Node: node, Rev: 1, Cols: 40, Rows: len(lines), Full: true}
	for y, l := range lines {
		s.Lines = append(s.Lines, tools.StreamLine{Y: y, R: []tools.StreamRun{{T: l}}})
	}
	return s
}

// start runs the model in teatest at w×h with a first frame of st.
func start(t *testing.T, f *fake, st tools.StreamState, w, h int) (*teatest.TestModel, *Model) {
	t.Helper()
	m := New(context.Background(), f.options())
	f.events <- tools.StreamEvent{Frame: &tools.StreamFrame{State: st}}
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
	t.Cleanup(func() { _ = tm.Quit() })
	waitModel(t, tm, "the first frame", func(m *Model) bool { return m.Connected() })
	return tm, m
}

// inspect runs fn on the program's goroutine and waits for it.
func inspect(t *testing.T, tm *teatest.TestModel, fn func(m *Model)) {
	t.Helper()
	done := make(chan struct{})
	tm.Send(inspectMsg(func(m *Model) { fn(m); close(done) }))
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the program did not answer")
	}
}

// waitModel waits until ok holds of the model (messages are handled in
// order, so a few rounds suffice once the input has arrived).
func waitModel(t *testing.T, tm *teatest.TestModel, what string, ok func(m *Model) bool) {
	t.Helper()
	var frame string
	if !testenv.Until(10*time.Second, func() bool {
		var got bool
		inspect(t, tm, func(m *Model) { got, frame = ok(m), ansi.Strip(m.Render()) })
		return got
	}) {
		t.Fatalf("never %s; the frame:\n%s", what, frame)
	}
}

func frameHas(s string) func(m *Model) bool {
	return func(m *Model) bool { return strings.Contains(ansi.Strip(m.Render()), s) }
}

func key(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "ctrl+]":
		return tea.KeyPressMsg{Code: ']', Mod: tea.ModCtrl}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

// The list: needs a human first, then working, idle, shells, exited;
// the header counts; j/k move and the stream is told which node to show.
func TestModelSortAndKeys(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	tm, _ := start(t, f, fleet(), 120, 30)
	waitModel(t, tm, "sorted", func(m *Model) bool {
		return strings.Join(m.Rows(), " ") == "n1 w1 i1 s1 e1" && m.Selected() == "n1"
	})
	waitModel(t, tm, "counted", frameHas("5 nodes · 1 need you · 1 working · 1 idle"))
	tm.Send(key("j"))
	tm.Send(key("j"))
	waitModel(t, tm, "on i1", func(m *Model) bool { return m.Selected() == "i1" })
	tm.Send(key("k"))
	waitModel(t, tm, "on w1", func(m *Model) bool { return m.Selected() == "w1" })
	var shown []string // the distinct Show calls, in order
	for len(shown) < 4 {
		select {
		case id := <-f.shows:
			if len(shown) == 0 || shown[len(shown)-1] != id {
				shown = append(shown, id)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Show was called for %v only", shown)
		}
	}
	if got := strings.Join(shown, " "); got != "n1 w1 i1 w1" {
		t.Fatalf("Show was called for %s, want n1 w1 i1 w1", got)
	}
	// The shown node's screen, from the stream; another node's is ignored.
	f.events <- tools.StreamEvent{Screen: screen("w1", "hello from w1")}
	f.events <- tools.StreamEvent{Screen: screen("i1", "not shown")}
	waitModel(t, tm, "the preview", frameHas("hello from w1"))
	inspect(t, tm, func(m *Model) {
		if strings.Contains(m.Render(), "not shown") {
			t.Error("another node's screen is drawn")
		}
	})
	tm.Send(key("?"))
	waitModel(t, tm, "the help", frameHas("focus: keys go to the node until C-]"))
	tm.Send(key("x")) // any key closes the help, and does nothing else
	waitModel(t, tm, "the help closed", func(m *Model) bool { return m.mode == modeNormal })
	f.noCall()
	tm.Send(key("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}

// `/` filters by name, kind or state; esc clears.
func TestModelFilter(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	tm, _ := start(t, f, fleet(), 120, 30)
	tm.Send(key("/"))
	tm.Type("shell")
	waitModel(t, tm, "filtered by kind", func(m *Model) bool { return strings.Join(m.Rows(), " ") == "s1 e1" })
	tm.Send(key("enter"))
	waitModel(t, tm, "the filter kept", frameHas(`filter "shell": 2 shown`))
	tm.Send(key("/"))
	for range len("shell") {
		tm.Send(tea.KeyPressMsg{Code: tea.KeyBackspace})
	}
	tm.Type("work")
	waitModel(t, tm, "filtered by state", func(m *Model) bool { return strings.Join(m.Rows(), " ") == "w1" && m.Selected() == "w1" })
	tm.Send(key("esc"))
	waitModel(t, tm, "cleared", func(m *Model) bool { return len(m.Rows()) == 5 })
}

// Under 80×24 only the list is drawn, and the frame says so.
func TestModelSmallTerminal(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	tm, _ := start(t, f, fleet(), 120, 30)
	f.events <- tools.StreamEvent{Screen: screen("n1", "PREVIEW-TEXT")}
	waitModel(t, tm, "the preview", frameHas("PREVIEW-TEXT"))
	tm.Send(tea.WindowSizeMsg{Width: 60, Height: 20})
	waitModel(t, tm, "list only", func(m *Model) bool {
		s := ansi.Strip(m.Render())
		return strings.Contains(s, "60×20 is under 80×24: list only") && !strings.Contains(s, "PREVIEW-TEXT") && strings.Contains(s, "n1")
	})
	tm.Send(tea.WindowSizeMsg{Width: 80, Height: 24})
	waitModel(t, tm, "the preview back", frameHas("PREVIEW-TEXT"))
}

// Focus mode: text keys are typed, others pressed as chords, pastes
// pasted, in order, until C-]; then keys are the dashboard's again.
func TestModelFocus(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	tm, _ := start(t, f, fleet(), 120, 30)
	tm.Send(key("G"))
	tm.Send(key("k")) // s1
	waitModel(t, tm, "on s1", func(m *Model) bool { return m.Selected() == "s1" })
	tm.Send(key("i"))
	waitModel(t, tm, "focused", func(m *Model) bool { return m.Focused() == "s1" })
	tm.Type("ls")
	tm.Send(key("enter"))
	tm.Send(key("q")) // typed, not quit
	tm.Send(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
	tm.Send(tea.PasteMsg{Content: "pasted\ntext"})
	want := []call{
		{"terminal_type", map[string]any{"terminal": "s1", "text": "l"}},
		{"terminal_type", map[string]any{"terminal": "s1", "text": "s"}},
		{"terminal_press", map[string]any{"terminal": "s1", "keys": "Enter"}},
		{"terminal_type", map[string]any{"terminal": "s1", "text": "q"}},
		{"terminal_press", map[string]any{"terminal": "s1", "keys": "C-c"}},
		{"terminal_paste", map[string]any{"terminal": "s1", "text": "pasted\ntext"}},
	}
	for _, w := range want {
		c := f.nextCall(w.op)
		for k, v := range w.args {
			if c.args[k] != v {
				t.Fatalf("%s: %s=%v, want %v (all: %v)", w.op, k, c.args[k], v, c.args)
			}
		}
	}
	tm.Send(key("ctrl+]"))
	waitModel(t, tm, "focus ended", func(m *Model) bool { return m.Focused() == "" && strings.Contains(m.Message(), "focus ended") })
	tm.Send(key("j"))
	waitModel(t, tm, "j moves again", func(m *Model) bool { return m.Selected() == "e1" })
	f.noCall()
}

// A node closed while focused ends focus and says so.
func TestModelFocusEndsWhenClosed(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	tm, _ := start(t, f, fleet(), 120, 30)
	tm.Send(key("j")) // w1
	tm.Send(key("i"))
	waitModel(t, tm, "focused", func(m *Model) bool { return m.Focused() == "w1" })
	st := fleet()
	st.Nodes = st.Nodes[:3] // w1 and n1 gone
	f.events <- tools.StreamEvent{State: &st}
	_ = st
	waitModel(t, tm, "focus ended", func(m *Model) bool {
		return m.Focused() == "" && strings.Contains(m.Message(), "node w1 was closed: focus ended")
	})
}

// The stream breaking shows "reconnecting"; a new frame clears it.
func TestModelReconnecting(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	tm, _ := start(t, f, fleet(), 120, 30)
	f.events <- tools.StreamEvent{Down: true, NotRunning: true}
	waitModel(t, tm, "reconnecting", frameHas("reconnecting… termsprawl is not running"))
	st := fleet()
	f.events <- tools.StreamEvent{Frame: &tools.StreamFrame{Show: "n1", State: st, Screen: screen("n1", "BACK")}}
	waitModel(t, tm, "back", func(m *Model) bool {
		s := ansi.Strip(m.Render())
		return m.Connected() && !strings.Contains(s, "reconnecting") && strings.Contains(s, "BACK")
	})
}

func withDialogs(ds ...tools.StreamDialog) tools.StreamState {
	st := fleet()
	st.Dialogs = ds
	return st
}

// a, A and d answer the selected node's oldest dialog (d asks a reason);
// a question offers its choices; a race says "already answered".
func TestModelAnswers(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	now := time.Now()
	older := tools.StreamDialog{Dialog: tools.Dialog{ID: "dialog-1", Node: "n1", Kind: "permission", Title: "Bash: ls", Created: now.Add(-time.Minute)}}
	newer := tools.StreamDialog{Dialog: tools.Dialog{ID: "dialog-2", Node: "n1", Kind: "permission", Title: "Bash: rm", Created: now}}
	tm, _ := start(t, f, withDialogs(newer, older), 120, 30)
	tm.Send(key("a"))
	if c := f.nextCall("dialog_answer"); c.args["dialog"] != "dialog-1" || c.args["mode"] != "allow" {
		t.Fatalf("a answered %v, want dialog-1 allow", c.args)
	}
	tm.Send(key("A"))
	if c := f.nextCall("dialog_answer"); c.args["mode"] != "always" {
		t.Fatalf("A answered %v, want always", c.args)
	}
	tm.Send(key("d"))
	waitModel(t, tm, "the reason prompt", frameHas("deny dialog-1, reason:"))
	tm.Type("use staging")
	tm.Send(key("enter"))
	if c := f.nextCall("dialog_answer"); c.args["mode"] != "deny" || c.args["reason"] != "use staging" {
		t.Fatalf("d answered %v, want deny with the reason", c.args)
	}
	// Answered elsewhere while being answered here.
	f.setReply(func(c call) tools.Result {
		return tools.ErrResult(tools.Errorf(tools.KindConflict, "the server's words (allow at 01:00)"))
	})
	tm.Send(key("a"))
	f.nextCall("dialog_answer")
	waitModel(t, tm, "already answered", func(m *Model) bool {
		return m.Message() == "dialog dialog-1 was already answered elsewhere or ended: the server's words (allow at 01:00)"
	})
	// The dialog goes while its reason is being typed.
	f.setReply(nil)
	tm.Send(key("d"))
	waitModel(t, tm, "the reason prompt", func(m *Model) bool { return m.mode == modeReason })
	st := withDialogs(newer)
	f.events <- tools.StreamEvent{State: &st}
	waitModel(t, tm, "answered elsewhere", func(m *Model) bool {
		return m.mode == modeNormal && strings.Contains(m.Message(), "dialog-1 was already answered elsewhere")
	})
	// A question: its choices.
	q := tools.StreamDialog{Dialog: tools.Dialog{ID: "dialog-3", Node: "n1", Kind: "question", Title: "Which db?", Options: []string{"staging", "production"}, Created: now.Add(-time.Hour)}}
	st = withDialogs(q)
	f.events <- tools.StreamEvent{State: &st}
	waitModel(t, tm, "the question listed", func(m *Model) bool { d := m.oldestDialog(); return d != nil && d.ID == "dialog-3" })
	tm.Send(key("a"))
	waitModel(t, tm, "the choices", frameHas("1) staging  2) production"))
	tm.Send(key("2"))
	if c := f.nextCall("dialog_answer"); c.args["mode"] != "allow" || c.args["selection"] != "production" {
		t.Fatalf("the choice answered %v", c.args)
	}
	// The answer's reply sets the message when it comes back; wait for it,
	// or it may land after the keys below and overwrite their message.
	waitModel(t, tm, "the choice answered", func(m *Model) bool { return m.Message() == "answered dialog-3: chose production" })
	// No dialog on the selected node.
	tm.Send(key("j"))
	tm.Send(key("a"))
	waitModel(t, tm, "nothing to answer", func(m *Model) bool { return m.Message() == "no pending dialog on this node" })
}

// x asks, y closes; n launches with kind, name and directory; r toggles
// the recording.
func TestModelCloseLaunchRecord(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	tm, _ := start(t, f, fleet(), 120, 30)
	tm.Send(key("x"))
	waitModel(t, tm, "the question", frameHas("close node n1? its program is ended (y/n)"))
	tm.Send(key("n"))
	waitModel(t, tm, "cancelled", func(m *Model) bool { return m.Message() == "close cancelled" })
	f.noCall()
	tm.Send(key("x"))
	tm.Send(key("y"))
	if c := f.nextCall("terminal_close"); c.args["terminal"] != "n1" {
		t.Fatalf("closed %v", c.args)
	}
	tm.Send(key("r"))
	if c := f.nextCall("terminal_record"); c.args["terminal"] != "n1" || c.args["on"] != true {
		t.Fatalf("record %v", c.args)
	}
	f.setReply(func(c call) tools.Result {
		return tools.OKResult(json.RawMessage(`{"action":"agent_launch","result":{"terminal":"new1","name":"rev"}}`))
	})
	tm.Send(key("n"))
	waitModel(t, tm, "the form", func(m *Model) bool { return m.mode == modeLaunch })
	// The kind is chosen, never typed free: → cycles, a letter picks.
	tm.Type("xyz")
	waitModel(t, tm, "no free-text kind", func(m *Model) bool { return m.launch[fieldKind].Value() == "shell" })
	tm.Send(tea.KeyPressMsg{Code: tea.KeyRight})
	tm.Send(tea.KeyPressMsg{Code: tea.KeyRight})
	waitModel(t, tm, "codex chosen", frameHas("kind: codex  ←/→: shell claude codex gemini opencode custom"))
	waitModel(t, tm, "how to give its key", frameHas("termsprawl agent codex --env-from-shell KEY"))
	tm.Send(key("tab"))
	tm.Type("rev")
	tm.Send(key("tab"))
	tm.Type("/tmp")
	tm.Send(key("enter")) // to the worktree field
	tm.Send(key("enter")) // to the trust field
	tm.Send(key("enter")) // to the command field
	waitModel(t, tm, "the command field", frameHas(CommandHint))
	tm.Type("codex --model  o3")
	tm.Send(key("enter"))
	c := f.nextCall("agent_launch")
	if c.args["agent"] != "codex" || c.args["name"] != "rev" || c.args["cwd"] != "/tmp" || fmt.Sprint(c.args["command"]) != "[codex --model o3]" {
		t.Fatalf("launch %v", c.args)
	}
	st := fleet()
	st.Nodes = append(st.Nodes, agent("new1", tools.AgentStarting, false))
	f.events <- tools.StreamEvent{State: &st}
	waitModel(t, tm, "the new node selected", func(m *Model) bool { return m.Selected() == "new1" })
}

// The mouse selects rows and tabs.
func TestModelMouse(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	tm, _ := start(t, f, fleet(), 120, 30)
	tm.Send(tea.MouseClickMsg{X: 3, Y: 3, Button: tea.MouseLeft}) // the third row
	waitModel(t, tm, "i1 selected", func(m *Model) bool { return m.Selected() == "i1" })
	var x int
	inspect(t, tm, func(m *Model) { x = m.geometry().tabX[tabDialogs][0] + 1 })
	tm.Send(tea.MouseClickMsg{X: x, Y: 1, Button: tea.MouseLeft})
	waitModel(t, tm, "the dialogs tab", func(m *Model) bool {
		return m.tab == tabDialogs && strings.Contains(ansi.Strip(m.Render()), "no pending dialogs")
	})
}

// A pending dialog's answers are buttons on the tab line; a click answers.
func TestModelAnswerButtons(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	d := tools.StreamDialog{Dialog: tools.Dialog{ID: "dialog-7", Node: "n1", Kind: "permission", Title: "Bash: ls", Created: time.Now()}}
	tm, _ := start(t, f, withDialogs(d), 120, 30)
	var allow button
	waitModel(t, tm, "the buttons", func(m *Model) bool {
		g := m.geometry()
		if len(g.buttons) != 3 || !strings.Contains(ansi.Strip(m.Render()), " allow   deny   always ") {
			return false
		}
		allow = g.buttons[0]
		return true
	})
	tm.Send(tea.MouseClickMsg{X: allow.x0 + 1, Y: 1, Button: tea.MouseLeft})
	if c := f.nextCall("dialog_answer"); c.args["dialog"] != "dialog-7" || c.args["mode"] != "allow" {
		t.Fatalf("the allow button answered %v", c.args)
	}
}

// The preview keeps a run's colours and attributes; NO_COLOR drops the
// colours and keeps the attributes.
func TestRunsStyled(t *testing.T) {
	t.Parallel()
	runs := []tools.StreamRun{{T: "red", F: "#ff0000", A: tools.RunBold}, {T: " cur", C: 1}}
	m := New(context.Background(), Options{})
	out := m.runsLine(runs, 80)
	if !strings.Contains(out, "38;2;255;0;0") || !strings.Contains(out, "\x1b[1") || !strings.Contains(out, "\x1b[7m") {
		t.Errorf("colours, bold and the cursor's inverse missing: %q", out)
	}
	m.opts.NoColor = true
	out = m.runsLine(runs, 80)
	if strings.Contains(out, "38;2") || !strings.Contains(out, "\x1b[1") {
		t.Errorf("NO_COLOR: %q, want bold without colours", out)
	}
	if got := ansi.Strip(m.runsLine(runs, 5)); got != "red c" {
		t.Errorf("cropped to 5 cells: %q", got)
	}
}

// A screen event with a scroll moves the shown rows up before its lines
// apply (the orchestrator sends a scrolling screen as its new rows only).
func TestModelScreenScroll(t *testing.T) {
	t.Parallel()
	m := New(context.Background(), Options{})
	m.sel = "n"
	row := func(y int, text string) tools.StreamLine {
		return tools.StreamLine{Y: y, R: []tools.StreamRun{{T: text}}}
	}
	m.applyScreen(&tools.StreamScreen{Node: "n", Rev: 1, Cols: 3, Rows: 4, Full: true,
		Lines: []tools.StreamLine{row(0, "a"), row(1, "b"), row(2, "c"), row(3, "d")}}, time.Time{})
	for _, st := range []struct {
		ev   tools.StreamScreen
		want string
	}{
		{tools.StreamScreen{Node: "n", Rev: 2, Cols: 3, Rows: 4, Scroll: 1, Lines: []tools.StreamLine{row(3, "e")}}, "b\nc\nd\ne\n"},
		{tools.StreamScreen{Node: "n", Rev: 3, Cols: 3, Rows: 4, Scroll: 2, Lines: []tools.StreamLine{row(1, "X"), row(2, "f")}}, "d\nX\nf\n\n"},
		{tools.StreamScreen{Node: "n", Rev: 4, Cols: 3, Rows: 4, Scroll: 9}, "\n\n\n\n"},
		{tools.StreamScreen{Node: "n", Rev: 5, Cols: 3, Rows: 2, Full: true, Scroll: 1, Lines: []tools.StreamLine{row(0, "p"), row(1, "q")}}, "p\nq\n"},
	} {
		m.applyScreen(&st.ev, time.Time{})
		if got := m.ScreenText(); got != st.want {
			t.Fatalf("after rev %d: %q, want %q", st.ev.Rev, got, st.want)
		}
	}
}
