package dash

import (
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// hostileDash is outside text that would drive a terminal if printed raw.
const hostileDash = "evil\x1b]52;c;eA==\a\x1b[2K\x1b[1A\u009b2J\u202erm -rf ~"

// rawControls are the pieces of hostileDash that must never reach the
// frame (the frame's own styling is SGR only).
var rawControls = []string{"\x1b]52", "\x1b[2K", "\x1b[1A", "\a", "\u009b", "\u202e"}

// The dashboard shows a node's name, host, branch, its dialogs (title,
// tool, input, options) and its screen with every control made visible
// (CONTRACT §26, issue 34 item 2).
func TestDashboardShowsOutsideTextVisible(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	st := fleet()
	n := agent("h1", tools.AgentWaiting, true)
	n.Name, n.Host = hostileDash, hostileDash
	n.Worktree = &tools.WorktreeState{Branch: "termsprawl/" + hostileDash, Base: hostileDash}
	st.Nodes = append(st.Nodes, n)
	st.Dialogs = []tools.StreamDialog{{Dialog: tools.Dialog{ID: "dialog-1", Node: "h1", Kind: "question", Title: hostileDash,
		Tool: hostileDash, Input: hostileDash, Options: []string{hostileDash}, Created: time.Now()}}}
	tm, _ := start(t, f, st, 160, 40)
	for _, tab := range []int{tabScreen, tabDialogs} {
		var frame string
		inspect(t, tm, func(m *Model) {
			m.sel, m.tab = "h1", tab
			frame = m.Render()
		})
		if !strings.Contains(frame, "^[]52") {
			t.Errorf("tab %d: the hostile text is not shown made visible:\n%q", tab, frame)
		}
		for _, c := range rawControls {
			if strings.Contains(frame, c) {
				t.Errorf("tab %d: raw %q reaches the frame", tab, c)
			}
		}
	}
}

// A long tool input is wrapped in the dialogs tab, so its end is shown.
func TestDashboardDialogInputKeepsItsEnd(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	st := fleet()
	input := `{"command":"ls ` + strings.Repeat("x", 300) + ` ; rm -rf ~/work"}`
	st.Dialogs = []tools.StreamDialog{{Dialog: tools.Dialog{ID: "dialog-1", Node: "n1", Kind: "permission", Title: "Bash: ls", Tool: "Bash", Input: input, Created: time.Now()}}}
	tm, _ := start(t, f, st, 120, 40)
	var frame string
	inspect(t, tm, func(m *Model) {
		m.sel, m.tab = "n1", tabDialogs
		frame = m.Render()
	})
	if !strings.Contains(frame, `rm -rf ~/work"}`) {
		t.Fatalf("the input's end is not shown:\n%s", frame)
	}
}
