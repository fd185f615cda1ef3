package dash

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/termsprawl/termsprawl/tools"
)

// sizedFleet is a fleet with what item 5 of issue 39 found: an exited
// shell with its code, shells with a launch time, an agent in a worktree
// whose branch is its name and one whose branch is not.
func sizedFleet() tools.StreamState {
	st := fleet()
	code := 3
	for i := range st.Nodes {
		st.Nodes[i].Since = "2026-12-02T00:55:00Z" // 5 minutes before the fake's now
		if st.Nodes[i].Terminal == "e1" {
			st.Nodes[i].ExitCode = &code
		}
	}
	alpha := agent("alpha", tools.AgentWorking, false)
	alpha.Worktree = &tools.WorktreeState{Branch: "termsprawl/alpha"}
	beta := agent("beta", tools.AgentIdle, false)
	beta.Worktree = &tools.WorktreeState{Branch: "termsprawl/fix-login"}
	st.Nodes = append(st.Nodes, alpha, beta)
	return st
}

// The dashboard at 80×24 and at 160×45 (CONTRACT §26): whole state words
// ("running", "needs you", "exited 3"), how long ago for shells too, a
// branch that repeats the name left out, `?` and `q` in the hints, and
// the help whole.
func TestModelSizes(t *testing.T) {
	t.Parallel()
	for _, sz := range [][2]int{{80, 24}, {160, 45}} {
		w, h := sz[0], sz[1]
		f := newFake(t)
		tm, _ := start(t, f, sizedFleet(), w, h)
		var frame string
		inspect(t, tm, func(m *Model) { frame = ansi.Strip(m.Render()) })
		lines := strings.Split(frame, "\n")
		if len(lines) != h {
			t.Fatalf("%d×%d: %d lines", w, h, len(lines))
		}
		for i, l := range lines {
			if lw := ansi.StringWidth(l); lw != w {
				t.Errorf("%d×%d: line %d is %d cells: %q", w, h, i, lw, l)
			}
		}
		row := func(id string) string {
			for _, l := range lines {
				if fs := strings.Fields(strings.TrimLeft(l, "▌ ")); len(fs) > 1 && fs[1] == id {
					return l
				}
			}
			t.Fatalf("%d×%d: no row of %s:\n%s", w, h, id, frame)
			return ""
		}
		for shown, want := range map[string][]string{
			"s1":     {"shell", "running", "5m"},
			"e1":     {"exited 3", "5m"},
			"n1":     {"needs you", "5m"},
			"w1":     {"working", "5m"},
			"⎇alpha": {"working"},
			"⎇beta":  {"idle"},
		} {
			r := row(shown)
			id := strings.TrimPrefix(shown, "⎇")
			if w >= 160 && id == "beta" {
				want = append(want, "⎇fix-login") // at 80 the branch is in the worktree line
			}
			for _, s := range want {
				if !strings.Contains(r, s) {
					t.Errorf("%d×%d: row of %s lacks %q: %q", w, h, id, s, r)
				}
			}
		}
		if r := row("⎇alpha"); strings.Count(r, "alpha") != 1 {
			t.Errorf("%d×%d: a branch equal to the name is repeated: %q", w, h, r)
		}
		hints := strings.TrimRight(lines[h-1], " ")
		if !strings.HasSuffix(hints, "? help · q quit") || !strings.HasPrefix(hints, "j/k move") {
			t.Errorf("%d×%d: hints %q", w, h, hints)
		}
		if w >= 160 && !strings.Contains(hints, "s search") {
			t.Errorf("%d×%d: hints dropped at full width: %q", w, h, hints)
		}
		tm.Send(key("?"))
		waitModel(t, tm, "the help", frameHas(" keys"))
		inspect(t, tm, func(m *Model) { frame = ansi.Strip(m.Render()) })
		for _, k := range Keys {
			if !strings.Contains(frame, k) {
				t.Errorf("%d×%d: the help is clipped: %q is missing:\n%s", w, h, k, frame)
			}
		}
	}
}

// The logs tab of a busy node: a history that moved on is read again from
// the oldest revision kept, never shown as an API error.
func TestModelLogsHistoryMovedOn(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.setReply(func(c call) tools.Result {
		if c.op != "terminal_capture_since" {
			return tools.OKResult(json.RawMessage(`{}`))
		}
		if c.args["cursor"] == uint64(1) {
			return tools.Result{Kind: tools.KindConflict, Error: "history-truncated: revision 1 of \"s1\" is older than the kept history",
				Details: map[string]any{"reason": "history-truncated", "oldest": float64(5000)}}
		}
		return tools.OKResult(json.RawMessage(`{"revision":6000,"logs":[{"label":"app","line":"listening on :8080"}]}`))
	})
	tm, _ := start(t, f, fleet(), 120, 30)
	inspect(t, tm, func(m *Model) { m.selectNode("s1") })
	for range tabLogs {
		tm.Send(key("tab"))
	}
	if c := f.nextCall("terminal_capture_since"); c.args["cursor"] != uint64(1) {
		t.Fatalf("first read %v", c.args)
	}
	if c := f.nextCall("terminal_capture_since"); c.args["cursor"] != uint64(5000) {
		t.Fatalf("the read again %v", c.args)
	}
	waitModel(t, tm, "the logs", frameHas("app listening on :8080"))
	inspect(t, tm, func(m *Model) {
		if s := ansi.Strip(m.Render()); strings.Contains(s, "history-truncated") {
			t.Errorf("the API error is shown:\n%s", s)
		}
	})
}

// A custom agent without a command is refused in the form, in the
// dashboard's words, before anything is asked of termsprawl.
func TestModelLaunchCustomNeedsCommand(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	tm, _ := start(t, f, fleet(), 80, 24)
	tm.Send(key("n"))
	waitModel(t, tm, "the form", frameHas("kind: shell"))
	tm.Type("c")
	tm.Type("c")
	tm.Type("c")
	waitModel(t, tm, "custom chosen", frameHas("kind: custom"))
	for range numLaunchFields {
		tm.Send(key("enter"))
	}
	waitModel(t, tm, "the refusal", func(m *Model) bool {
		return strings.Contains(m.launchErr, "a custom agent needs a command") && strings.Contains(ansi.Strip(m.Render()), "a custom agent needs a command")
	})
	f.noCall()
}
