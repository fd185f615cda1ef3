package dash

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/termsprawl/termsprawl/tools"
)

// Keys is the help text (`?`): the keys of CONTRACT §19.
var Keys = []string{
	"j/k ↑/↓  move            enter  attach (detach returns here)",
	"i        focus: keys go to the node until C-]",
	"a / A    allow / always the oldest dialog; a question offers its choices",
	"d        deny it (asks a reason)",
	"n        launch (kind, name, directory, worktree, command)  x  close",
	"r        recording on/off                     /  filter by name, kind, state",
	"s        search every node's history; enter selects a match's node",
	"tab      preview tabs: screen, dialogs, recording, logs, diff",
	"u        the logs or diff tab again        pgup/pgdn  scroll the diff",
	"q        quit (nodes keep running)            ?  this help",
	"mouse    click a row to select it, a tab to show it; wheel moves",
}

// geometry of the current frame.
type geometry struct {
	small         bool
	listW         int // the list's width
	px, pw, ph    int // the preview's first column, width and content rows
	tabX          [numTabs][2]int
	buttons       []button // the answer buttons on the tab line
	listTop       int      // the first list row's y
	contentTop    int      // the preview content's first y
	footer, hints int      // the footer's and hints' y
}

func (m *Model) geometry() geometry {
	g := geometry{listTop: 1, contentTop: 2, footer: m.height - 2, hints: m.height - 1}
	g.small = m.width < MinWidth || m.height < MinHeight
	if g.small {
		g.listW = m.width
		return g
	}
	// The list keeps a readable row (name, kind, the whole state word,
	// how long ago) at 80 columns: 35% of the width, at least listMinW,
	// at most half.
	g.listW = min(max(m.width*35/100, listMinW), m.width/2)
	g.px = g.listW + 1
	g.pw = m.width - g.px
	g.ph = max(m.height-4, 1)
	if m.worktreeOf(m.sel) != nil {
		g.ph = max(g.ph-1, 1) // the worktree line under the tabs
	}
	x := g.px
	for i, n := range tabNames {
		w := len(n) + 2
		g.tabX[i] = [2]int{x, x + w}
		x += w + 1
	}
	// The answer buttons of the selected node's oldest dialog, at the
	// tab line's right end.
	if d := m.oldestDialog(); d != nil {
		labels := [][2]string{{" allow ", "a"}, {" deny ", "d"}, {" always ", "A"}}
		if len(d.Options) > 0 {
			labels = [][2]string{{" choose ", "a"}, {" deny ", "d"}}
		}
		w := 0
		for _, l := range labels {
			w += len(l[0]) + 1
		}
		bx := max(m.width-w, x+1)
		for _, l := range labels {
			g.buttons = append(g.buttons, button{label: l[0], key: l[1], x0: bx, x1: bx + len(l[0])})
			bx += len(l[0]) + 1
		}
	}
	return g
}

// button is a clickable answer: label drawn at [x0, x1) of the tab line;
// a click does what key does.
type button struct {
	label  string
	key    string
	x0, x1 int
}

// sty is a text style: colours "#rrggbb" ("" the terminal's default).
type sty struct {
	fg, bg                                                 string
	bold, italic, faint, strike, underline, reverse, blink bool
}

// hexColor parses "#rrggbb" (nil for anything else).
func hexColor(h string) ansi.Color {
	if len(h) != 7 || h[0] != '#' {
		return nil
	}
	var v uint32
	for _, c := range h[1:] {
		var d uint32
		switch {
		case c >= '0' && c <= '9':
			d = uint32(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint32(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint32(c-'A') + 10
		default:
			return nil
		}
		v = v<<4 | d
	}
	return ansi.RGBColor{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v)}
}

// paint styles text with SGR sequences (x/ansi); under NO_COLOR without
// colours. Bubble Tea's renderer brings the colours down to what the
// terminal has.
func (m *Model) paint(text string, st sty) string {
	var s ansi.Style
	if st.bold {
		s = s.Bold()
	}
	if st.faint {
		s = s.Faint()
	}
	if st.italic {
		s = s.Italic(true)
	}
	if st.underline {
		s = s.Underline(true)
	}
	if st.strike {
		s = s.Strikethrough(true)
	}
	if st.reverse {
		s = s.Reverse(true)
	}
	if st.blink {
		s = s.Blink(true)
	}
	if !m.opts.NoColor {
		if c := hexColor(st.fg); c != nil {
			s = s.ForegroundColor(c)
		}
		if c := hexColor(st.bg); c != nil {
			s = s.BackgroundColor(c)
		}
	}
	if len(s) == 0 {
		return text
	}
	return s.Styled(text)
}

// style is paint's common case: a colour, maybe bold.
func (m *Model) style(fg string, bold bool) painter { return painter{m, sty{fg: fg, bold: bold}} }

type painter struct {
	m  *Model
	st sty
}

func (p painter) Render(s string) string { return p.m.paint(s, p.st) }

// glyph is a node's state mark and colour.
func glyph(n tools.StreamNode, needs bool) (string, string) {
	st := state(n)
	switch {
	case n.Status == tools.StatusExited || st == tools.AgentExited:
		return "✕", "#808080"
	case needs:
		return "!", "#ffaf00"
	case st == tools.AgentWorking:
		return "●", "#5fd75f"
	case st == tools.AgentStarting:
		return "◌", "#5fafff"
	case st == tools.AgentError:
		return "✗", "#ff5f5f"
	case st == tools.AgentIdle:
		return "○", "#5fafff"
	}
	return "$", "#bcbcbc"
}

// ago is how long ago t was, in one short word.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(int(d.Seconds()), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// since is when the node's state began: the agent's, else when it was
// launched (terminal_list's since).
func since(n tools.StreamNode) time.Time {
	if n.AgentState != nil {
		if !n.AgentState.Since.IsZero() {
			return n.AgentState.Since
		}
		if !n.AgentState.Updated.IsZero() {
			return n.AgentState.Updated
		}
	}
	if t, err := time.Parse(time.RFC3339, n.Since); err == nil {
		return t
	}
	return time.Time{}
}

// pad cuts s to w cells and pads it with spaces to exactly w.
func pad(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if sw := ansi.StringWidth(s); sw > w {
		s = ansi.Truncate(s, w, "")
	}
	if sw := ansi.StringWidth(s); sw < w {
		s += strings.Repeat(" ", w-sw)
	}
	return s
}

// counts are the header's numbers.
func (m *Model) counts() (all, needs, working, idle int) {
	for _, n := range m.nodes {
		all++
		switch {
		case m.needsHuman(n):
			needs++
		case state(n) == tools.AgentWorking:
			working++
		case state(n) == tools.AgentIdle:
			idle++
		}
	}
	return
}

// View draws the frame.
func (m *Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "termsprawl"
	return v
}

// Render is the frame's text (View's content).
func (m *Model) Render() string {
	g := m.geometry()
	lines := make([]string, m.height)
	lines[0] = pad(m.header(), m.width)
	list := m.listLines(g)
	if g.small && m.mode == modeSearch {
		list = m.searchLines(g.footer - g.listTop)
	}
	// The help and the launch form take the list's and the preview's
	// room: whole at 80×24 (the help below it too; there the footer is
	// the launch form).
	var over []string
	switch {
	case m.mode == modeHelp:
		over = m.helpLines()
	case m.mode == modeLaunch && !g.small:
		over = m.launchForm()
	}
	if over != nil {
		for y := g.listTop; y < g.footer; y++ {
			if i := y - g.listTop; i < len(over) {
				lines[y] = pad(over[i], m.width)
			} else {
				lines[y] = pad("", m.width)
			}
		}
	}
	var right []string
	if !g.small && over == nil {
		right = m.previewLines(g)
	}
	sep := m.style("#444444", false).Render("│")
	for y := g.listTop; y < g.footer; y++ {
		if over != nil {
			break
		}
		i := y - g.listTop
		l := ""
		if i < len(list) {
			l = list[i]
		}
		if g.small {
			lines[y] = pad(l, m.width)
			continue
		}
		r := ""
		if i < len(right) {
			r = right[i]
		}
		lines[y] = pad(l, g.listW) + sep + pad(r, g.pw)
	}
	if g.footer >= 1 {
		lines[g.footer] = pad(m.footer(g), m.width)
	}
	if g.hints >= 1 {
		lines[g.hints] = pad(m.style("#808080", false).Render(m.hints()), m.width)
	}
	return strings.Join(lines, "\n")
}

func (m *Model) header() string {
	all, needs, working, idle := m.counts()
	needsText := fmt.Sprintf("%d need you", needs)
	if needs > 0 {
		needsText = m.style("#ffaf00", true).Render(needsText)
	}
	h := m.style("", true).Render("termsprawl") + fmt.Sprintf("  %d node%s · ", all, map[bool]string{true: "", false: "s"}[all == 1]) + needsText + fmt.Sprintf(" · %d working · %d idle", working, idle)
	if m.filter != "" {
		h += fmt.Sprintf("  filter %q: %d shown", m.filter, len(m.rows))
	}
	if !m.connected {
		why := m.downWhy
		if !m.everUp && why == "" {
			why = "connecting…"
		}
		h += "  " + m.style("#ff5f5f", true).Render("reconnecting… "+why)
	}
	return h
}

func (m *Model) listLines(g geometry) []string {
	out := []string{}
	if len(m.rows) == 0 {
		if m.filter != "" {
			return []string{" no node matches the filter (esc clears it)"}
		}
		return []string{" no nodes: n launches one"}
	}
	now := m.opts.Now()
	end := min(len(m.rows), m.offset+m.listHeight())
	for _, n := range m.rows[m.offset:end] {
		gl, col := glyph(n, m.needsHuman(n))
		mark := " "
		selected := n.Terminal == m.sel
		if selected {
			mark = "▌"
		}
		nm := name(n)
		if n.Terminal == m.opts.Self {
			nm = "◆" + nm // the node this dashboard runs in
		}
		if n.Worktree != nil {
			nm = "⎇" + nm // works in a git worktree; its branch ends the row
		}
		if n.Host != "" {
			nm += "@" + tools.VisibleLine(n.Host)
		}
		st := stateWord(n)
		if m.needsHuman(n) {
			st = "needs you"
		}
		lay := rowLayout(g.listW - 1) // a blank column before the preview's edge
		row := mark + m.style(col, m.needsHuman(n)).Render(gl) + " " + pad(nm, lay.name)
		if lay.kind {
			row += " " + pad(sandboxMark(n)+kind(n), kindW)
		} else if mk := sandboxMark(n); mk != "" {
			row = mark + m.style(col, m.needsHuman(n)).Render(gl) + " " + pad(mk+nm, lay.name) // the mark stays without its column
		}
		row += " " + pad(st, stateW) + " " + pad(ago(now, since(n)), agoW)
		// A worktree's branch ends the row, unless it only repeats the
		// name (termsprawl agent --worktree NAME makes both NAME).
		if n.Worktree != nil && shortBranch(n.Worktree) != name(n) {
			row += " ⎇" + shortBranch(n.Worktree)
		}
		if selected {
			row = m.paint(pad(ansi.Strip(row), g.listW), sty{bold: true, reverse: m.opts.NoColor, bg: "#303a4a"})
		}
		out = append(out, row)
	}
	if g.small {
		out = append(out, "", m.style("#ffaf00", false).Render(fmt.Sprintf(" %d×%d is under %d×%d: list only", m.width, m.height, MinWidth, MinHeight)))
	}
	return out
}

// The list row's columns: mark and glyph, the name, the kind (with the
// sandbox mark), the state word, how long ago.
const (
	listMinW = 38 // the narrowest list that shows every column
	kindW    = 7
	stateW   = 10 // "needs you", "starting", "exited 127"
	agoW     = 3
)

// layout is a row's columns at a list width.
type layout struct {
	name int  // the name's cells
	kind bool // whether the kind column is shown
}

// rowLayout fits a row in w cells: the name gets what the other columns
// leave (11 to 18 cells); below that the kind column goes first, and the
// state and age stay whole.
func rowLayout(w int) layout {
	fixed := 2 + 1 + 1 + stateW + 1 + agoW // mark, glyph, spaces, state, age
	if n := w - fixed - (1 + kindW); n >= 11 {
		return layout{name: min(n, 18), kind: true}
	}
	return layout{name: max(w-fixed, 6)}
}

// stateWord is a node's state as the list shows it: an exited node with
// its exit code (exited 3).
func stateWord(n tools.StreamNode) string {
	st := state(n)
	if (st == tools.StatusExited || st == tools.AgentExited) && n.ExitCode != nil {
		st = fmt.Sprintf("exited %d", *n.ExitCode)
	}
	return st
}

func (m *Model) previewLines(g geometry) []string {
	var tabs strings.Builder
	for i, n := range tabNames {
		if i > 0 {
			tabs.WriteByte(' ')
		}
		label := " " + n + " "
		if i == m.tab {
			tabs.WriteString(m.paint(label, sty{reverse: true, bold: true}))
		} else {
			tabs.WriteString(m.style("#bcbcbc", false).Render(label))
		}
	}
	if len(g.buttons) > 0 {
		used := ansi.StringWidth(tabs.String())
		tabs.WriteString(strings.Repeat(" ", max(g.buttons[0].x0-g.px-used, 1)))
		for i, b := range g.buttons {
			if i > 0 {
				tabs.WriteByte(' ')
			}
			tabs.WriteString(m.paint(b.label, sty{reverse: true, bold: true, fg: "#ffaf00"}))
		}
	}
	out := []string{tabs.String()}
	if m.mode == modeSearch {
		return append(out, m.searchLines(g.ph)...)
	}
	n, ok := m.node(m.sel)
	if !ok {
		return append(out, "", " select a node")
	}
	if n.Worktree != nil {
		out = append(out, m.worktreeLine(n.Worktree))
	}
	switch m.tab {
	case tabDiff:
		out = append(out, m.diffLines(n, g.ph)...)
	case tabScreen:
		out = append(out, m.screenLines(g)...)
	case tabDialogs:
		out = append(out, m.dialogLines(n)...)
	case tabRecording:
		if n.Recording == nil {
			out = append(out, "", fmt.Sprintf(" %s is not recorded: r starts a recording", name(n)))
		} else {
			out = append(out, "", fmt.Sprintf(" recording since %s", n.Recording.Since), " "+tools.VisibleLine(n.Recording.Path), "", " r stops it; termsprawl replay "+n.Terminal+" plays it")
		}
	case tabLogs:
		if m.tabFor != n.Terminal {
			out = append(out, "", " loading…")
		} else {
			out = append(out, m.tabText...)
		}
	}
	return out
}

func (m *Model) dialogLines(n tools.StreamNode) []string {
	out := []string{""}
	for _, d := range m.dialogs {
		if d.Node != n.Terminal {
			continue
		}
		out = append(out, m.style("#ffaf00", true).Render(fmt.Sprintf(" %s  %s", tools.VisibleLine(d.ID), tools.VisibleLine(d.Kind)))+"  "+tools.VisibleLine(d.Title))
		if d.Tool != "" {
			out = append(out, "   tool: "+tools.VisibleLine(d.Tool))
		}
		if d.Input != "" {
			// Wrapped, never cut at the pane's edge: its end is what
			// matters (CONTRACT §26).
			w := max(m.geometry().pw-4, 20)
			for i, l := range strings.Split(ansi.Hardwrap("input: "+tools.VisibleLine(d.Input), w, true), "\n") {
				if i == 0 {
					out = append(out, "   "+l)
				} else {
					out = append(out, "     "+l)
				}
			}
		}
		if len(d.Options) > 0 {
			for i, o := range d.Options {
				out = append(out, fmt.Sprintf("   %d) %s", i+1, tools.VisibleLine(o)))
			}
		}
		out = append(out, "")
	}
	if len(out) == 1 {
		out = append(out, " no pending dialogs")
	} else {
		out = append(out, " a allow · d deny (asks a reason) · A always — the oldest first")
	}
	// The node's recent decisions (audit_list, loaded with the tab).
	if m.tabFor == n.Terminal && len(m.tabText) > 0 {
		out = append(out, "", m.style("", true).Render(" recent decisions (termsprawl audit "+n.Terminal+")"))
		out = append(out, m.tabText...)
	}
	return out
}

// screenLines draws the shown screen, styled and cropped to the preview.
func (m *Model) screenLines(g geometry) []string {
	s := m.screen
	if s.node != m.sel || s.lines == nil {
		if !m.connected {
			return []string{"", " (no screen while reconnecting)"}
		}
		return []string{"", " loading…"}
	}
	rows := min(s.rows, g.ph)
	// Crop to the bottom when the cursor would fall off: the prompt is
	// where the action is.
	top := 0
	if s.rows > g.ph && s.cursor.Y >= g.ph {
		top = min(s.cursor.Y-g.ph+1, s.rows-g.ph)
	}
	out := make([]string, 0, rows)
	for y := top; y < top+rows; y++ {
		out = append(out, m.runsLine(s.lines[y], g.pw))
	}
	return out
}

// runsLine renders a row's runs in at most w cells.
func (m *Model) runsLine(runs []tools.StreamRun, w int) string {
	var b strings.Builder
	left := w
	for _, r := range runs {
		if left <= 0 {
			break
		}
		t := tools.VisibleLine(r.T)
		tw := ansi.StringWidth(t)
		if tw > left {
			t = ansi.Truncate(t, left, "")
			tw = ansi.StringWidth(t)
		}
		left -= tw
		if r.F == "" && r.B == "" && r.A == 0 && r.C == 0 {
			b.WriteString(t)
			continue
		}
		st := sty{fg: r.F, bg: r.B, bold: r.A&tools.RunBold != 0, italic: r.A&tools.RunItalic != 0, faint: r.A&tools.RunFaint != 0,
			strike: r.A&tools.RunStrike != 0, underline: r.A>>8 != 0, blink: r.A&tools.RunBlink != 0}
		if r.A&tools.RunInvisible != 0 {
			t = strings.Repeat(" ", tw)
		}
		// The cursor: its cell's colours are already swapped (the stream
		// resolves them) unless they say nothing, or colours are off.
		st.reverse = r.C != 0 && (m.opts.NoColor || (r.F == "" && r.B == ""))
		b.WriteString(m.paint(t, st))
	}
	return b.String()
}

func (m *Model) footer(g geometry) string {
	switch m.mode {
	case modeFilter, modeReason, modeSearchPrompt:
		return m.input.view(m)
	case modeChoice:
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %s  ", tools.VisibleLine(m.pending.ID), tools.VisibleLine(m.pending.Title))
		for i, o := range m.pending.Options {
			fmt.Fprintf(&b, "%d) %s  ", i+1, tools.VisibleLine(o))
		}
		return b.String() + "d deny · esc cancel"
	case modeConfirmClose:
		return m.style("#ffaf00", true).Render(fmt.Sprintf("close node %s? its program is ended (y/n)", m.closing))
	case modeLaunch:
		if !g.small {
			return "" // the form, with its refusal, is over the list and the preview
		}
		if m.launchErr != "" {
			return m.style("#ff5f5f", true).Render(m.launchErr)
		}
		// Under 80×24 the footer is the form: the field being edited.
		f := m.launch[m.launchAt].view(m)
		if m.launchAt == fieldKind {
			f = "kind: " + m.launch[fieldKind].Value() + " (←/→)"
		}
		return fmt.Sprintf("launch %d/%d  %s", m.launchAt+1, len(m.launch), f)
	case modeFocus:
		return m.style("#5fd75f", true).Render("FOCUS → "+m.focused) + "  keys go to the node · C-] ends focus  " + m.message
	}
	return m.message
}

func (m *Model) hints() string {
	switch m.mode {
	case modeFocus:
		return "C-] leave focus"
	case modeLaunch:
		return "tab/enter next field · ←/→ kind · enter on the last launches · esc cancel"
	case modeFilter:
		return "enter keep filter · esc clear"
	case modeReason:
		return "enter deny with this reason · esc cancel"
	case modeHelp:
		return "any key closes the help"
	case modeSearchPrompt:
		return "enter search (either case) · esc cancel"
	case modeSearch:
		return "j/k move · enter select the node · s search again · esc back"
	}
	return fitHints(m.width, "j/k move", "enter attach", "i focus", "a/d/A answer", "n new", "x close", "r record", "/ filter", "s search", "tab tabs")
}

// fitHints joins the hints that fit in w cells, in order, always ending
// with "? help · q quit" (at 80×24 the help and the way out stay visible).
func fitHints(w int, hints ...string) string {
	const tail = "? help · q quit"
	out := ""
	for _, h := range hints {
		if ansi.StringWidth(out+h+" · "+tail) > w {
			break
		}
		out += h + " · "
	}
	return out + tail
}

// onClick selects a row or a tab.
func (m *Model) onClick(ms tea.Mouse) tea.Cmd {
	if ms.Button != tea.MouseLeft {
		return nil
	}
	g := m.geometry()
	if ms.Y >= g.listTop && ms.Y < g.footer && ms.X < g.listW {
		i := m.offset + ms.Y - g.listTop
		if i < len(m.rows) {
			m.selectNode(m.rows[i].Terminal)
		}
		return nil
	}
	if !g.small && ms.Y == g.listTop {
		for _, b := range g.buttons {
			if ms.X >= b.x0 && ms.X < b.x1 && m.mode == modeNormal {
				return m.onKey(tea.KeyPressMsg{Code: rune(b.key[0]), Text: b.key})
			}
		}
		for i, r := range g.tabX {
			if ms.X >= r[0] && ms.X < r[1] {
				m.tab = i
				return m.loadTab()
			}
		}
	}
	return nil
}

// helpLines is the help (?), drawn over the list and the preview.
func (m *Model) helpLines() []string {
	out := []string{m.style("", true).Render(" keys"), ""}
	for _, k := range Keys {
		out = append(out, " "+k)
	}
	detach, answer := m.opts.DetachKey, m.opts.AnswerKey
	if detach == "" {
		detach = tools.DefaultDetachKey
	}
	if answer == "" {
		answer = tools.DefaultAnswerKey
	}
	return append(out, "", fmt.Sprintf(" attached (enter): %s detaches back here, %s answers dialogs, also inside your own tmux", detach, answer))
}

// launchForm is the launch form, drawn in the preview: its fields, and
// the refusal of the last try.
func (m *Model) launchForm() []string {
	out := []string{"", m.style("", true).Render(" launch a node")}
	for i := range m.launch {
		mark := "  "
		if i == m.launchAt {
			mark = "▸ "
		}
		line := " " + mark + m.launch[i].view(m)
		if i == fieldKind { // chosen, not typed: no cursor
			line = " " + mark + m.launch[i].Prompt + m.paint(m.launch[i].Value(), sty{bold: true})
			if i == m.launchAt {
				line += m.paint("  ←/→: "+strings.Join(LaunchKinds, " "), sty{faint: true})
			}
		}
		out = append(out, line)
	}
	if k := m.launch[fieldKind].Value(); k != tools.KindShell {
		// How an agent gets its API key (CONTRACT §26): the form has no
		// field for secrets, so it says where one comes from.
		out = append(out, "", m.paint(" an agent gets termsprawl's environment; for its API key from this shell:", sty{faint: true}),
			m.paint("   termsprawl agent "+k+" --env-from-shell KEY   (e.g. ANTHROPIC_API_KEY)", sty{faint: true}))
	}
	out = append(out, "")
	switch {
	case m.launching:
		out = append(out, " launching…")
	case m.launchErr != "":
		// Wrapped, never cut: the end of a refusal says what to do.
		for _, l := range strings.Split(ansi.Hardwrap(m.launchErr, max(m.width-2, 20), true), "\n") {
			out = append(out, m.style("#ff5f5f", true).Render(" "+l))
		}
		out = append(out, " fix a field and enter again, or esc")
	}
	return out
}

// loadTab reads what the logs or the diff tab shows.
func (m *Model) loadTab() tea.Cmd {
	if m.tab == tabDiff {
		return m.loadDiff()
	}
	if m.tab == tabDialogs && m.sel != "" {
		return m.loadDecisions(m.sel)
	}
	if m.tab != tabLogs || m.sel == "" {
		return nil
	}
	return m.loadLogs(m.sel, 1, true)
}

// loadLogs reads a node's kept log lines from revision cursor. A busy
// node's history has moved past the cursor (history-truncated, a normal
// condition): it reads again from the oldest revision kept, once.
func (m *Model) loadLogs(id string, cursor uint64, again bool) tea.Cmd {
	return m.call("", "terminal_capture_since", map[string]any{"terminal": id, "cursor": cursor}, func(m *Model, res tools.Result) {
		if !res.OK && again && res.Details["reason"] == "history-truncated" {
			if oldest, ok := res.Details["oldest"].(float64); ok && oldest >= 1 {
				m.later(m.loadLogs(id, uint64(oldest), false))
				return
			}
		}
		if m.tab != tabLogs {
			return // tabbed on: the answer would take the dialogs tab's text
		}
		m.tabFor = id
		if !res.OK {
			m.tabText = []string{"", " " + tools.VisibleLine(res.Error)}
			return
		}
		var c tools.Changes
		if tools.DecodeValue(res.Value, &c) != nil || len(c.Logs) == 0 {
			m.tabText = []string{"", " no application logs (terminal_launch {logs: [{path, label}]} follows files)"}
			return
		}
		m.tabText = []string{""}
		for _, l := range c.Logs {
			m.tabText = append(m.tabText, fmt.Sprintf(" %s %s", tools.VisibleLine(l.Label), tools.VisibleLine(l.Line)))
		}
	})
}

// loadDecisions reads a node's last permission decisions for the
// dialogs tab (CONTRACT §28): who decided (a rule, a human, a timeout, a
// budget), the tool and its input, and why.
func (m *Model) loadDecisions(id string) tea.Cmd {
	m.decisionsAsked = id
	return m.call("", "audit_list", map[string]any{"node": id, "limit": 8}, func(m *Model, res tools.Result) {
		if m.tab != tabDialogs {
			return // tabbed on: the answer would take the logs tab's text
		}
		m.tabFor = id
		var l tools.AuditList
		if !res.OK || tools.DecodeValue(res.Value, &l) != nil {
			m.tabText = nil
			return
		}
		m.tabText = []string{}
		for i := len(l.Entries) - 1; i >= 0; i-- {
			e := l.Entries[i]
			who := e.By
			if e.Rule != "" {
				who += " " + e.Rule
			} else if e.Surface != "" {
				who += " (" + e.Surface + ")"
			}
			m.tabText = append(m.tabText, fmt.Sprintf(" %s %s by %s  %s %s", e.Time.Local().Format("15:04:05"), strings.ToUpper(e.Decision),
				tools.VisibleLine(who), tools.VisibleLine(e.Tool), tools.VisibleLine(e.Input)))
		}
		if len(m.tabText) == 0 {
			m.tabText = []string{" none yet"}
		}
	})
}
