package dash

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/termsprawl/termsprawl/tools"
)

// wtFleet is an agent working in a worktree and a shell without one.
func wtFleet(st string) tools.StreamState {
	a := agent("fixer", st, false)
	a.Worktree = &tools.WorktreeState{Path: "/r.worktrees/fix", Branch: "termsprawl/fix", Base: "main", Dirty: true, Ahead: 2, Checked: "2026-12-02T01:00:00Z"}
	return tools.StreamState{Nodes: []tools.StreamNode{a, shell("s1")}}
}

func diffReply(text, cut string) func(call) tools.Result {
	return func(c call) tools.Result {
		if c.op != "worktree_diff" {
			return tools.OKResult(map[string]any{})
		}
		return tools.OKResult(tools.WorktreeDiff{Node: "fixer", Branch: "termsprawl/fix", From: "main", Files: 1, Insertions: 1, Deletions: 1, Diff: text, Cut: cut, Turns: []tools.WorktreeTurn{}})
	}
}

const aDiff = "diff --git a/README b/README\n--- a/README\n+++ b/README\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"

// The diff tab: the branch in the row, dirty/ahead in the preview, the
// stat and the styled diff fetched off the input path, "cut" when cut,
// scrolling, a fetch again at the turn's end and on u.
func TestModelDiffTab(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.setReply(diffReply(aDiff, "cut at 1 MiB: 3 files not shown"))
	tm, _ := start(t, f, wtFleet(tools.AgentWorking), 120, 30)
	waitModel(t, tm, "the branch in the row and the worktree line", func(m *Model) bool {
		s := ansi.Strip(m.Render())
		return m.Selected() == "fixer" && strings.Contains(s, "⎇fix") && strings.Contains(s, "⎇ termsprawl/fix · from main · dirty · 2 ahead · 0 behind")
	})
	f.noCall()
	tm.Send(tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}) // screen → diff, the last tab
	if c := f.nextCall("worktree_diff"); c.args["node"] != "fixer" {
		t.Fatalf("worktree_diff %v", c.args)
	}
	waitModel(t, tm, "the diff", func(m *Model) bool {
		s := ansi.Strip(m.Render())
		return strings.Contains(s, "1 file changed, +1 -1 against main") && strings.Contains(s, "cut: cut at 1 MiB: 3 files not shown") &&
			strings.Contains(s, "+TWO") && strings.Contains(s, "-two") && strings.Contains(s, "@@ -1,2 +1,2 @@")
	})
	inspect(t, tm, func(m *Model) {
		if r := m.Render(); !strings.Contains(r, m.style("#5fd75f", false).Render("+TWO")) || !strings.Contains(r, m.style("#ff5f5f", false).Render("-two")) {
			t.Errorf("the +/- lines are not styled:\n%q", r)
		}
	})

	// The turn ends (working → idle): fetched again, now a long diff.
	var long strings.Builder
	long.WriteString("diff --git a/big b/big\n--- a/big\n+++ b/big\n@@ -0,0 +1,100 @@\n")
	for i := range 100 {
		fmt.Fprintf(&long, "+line %d\n", i+1)
	}
	f.setReply(diffReply(long.String(), ""))
	st := wtFleet(tools.AgentIdle)
	f.events <- tools.StreamEvent{State: &st}
	f.nextCall("worktree_diff")
	waitModel(t, tm, "the long diff", frameHas("lines 1–23 of 104"))
	tm.Send(tea.KeyPressMsg{Code: tea.KeyPgDown})
	waitModel(t, tm, "scrolled", func(m *Model) bool {
		s := ansi.Strip(m.Render())
		return !strings.Contains(s, "+line 1 ") && strings.Contains(s, "+line 30") && !strings.Contains(s, "cut:")
	})
	tm.Send(key("u"))
	f.nextCall("worktree_diff")

	// A node without a worktree: says so and asks nothing.
	tm.Send(key("j"))
	waitModel(t, tm, "no worktree", frameHas("s1 has no worktree"))
	f.noCall()
}

// A refusal of a launch with a worktree is shown in the form, which
// stays open; "+" asks for an automatic name.
func TestModelLaunchWorktreeRefused(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.setReply(func(c call) tools.Result {
		return tools.Result{Kind: tools.KindRejected, Error: "/tmp is not in a git repository: give a directory inside one"}
	})
	tm, _ := start(t, f, fleet(), 120, 30)
	tm.Send(key("n"))
	waitModel(t, tm, "the form", frameHas("worktree: "+WorktreeHint))
	for range 3 {
		tm.Send(key("tab"))
	}
	tm.Type("fix")
	tm.Send(key("enter")) // to the trust field (empty: no approval)
	tm.Send(key("enter")) // to the command field (empty: the shell)
	tm.Send(key("enter"))
	c := f.nextCall("terminal_launch")
	if w, ok := c.args["worktree"].(map[string]any); !ok || w["branch"] != "fix" {
		t.Fatalf("launch %v", c.args)
	}
	waitModel(t, tm, "the refusal in the form", func(m *Model) bool {
		return m.mode == modeLaunch && strings.Contains(ansi.Strip(m.Render()), "launch refused: /tmp is not in a git repository")
	})
	tm.Send(tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}) // back to the trust field
	tm.Send(tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}) // and to the worktree field
	for range 3 {
		tm.Send(tea.KeyPressMsg{Code: tea.KeyBackspace})
	}
	tm.Type("+")
	tm.Send(key("tab"))
	tm.Send(key("tab"))
	tm.Send(key("enter"))
	c = f.nextCall("terminal_launch")
	if w, ok := c.args["worktree"].(map[string]any); !ok || len(w) != 0 {
		t.Fatalf("launch with +: %v", c.args)
	}
}

// The launch form's trust field is the human's approval of the
// repository's .termsprawl/ files (CONTRACT §26), given before the
// launch: y approves the directory's repository, then launches; without
// a directory, with another word, or when the approval fails, nothing is
// approved or launched and the form says why.
func TestModelLaunchTrustSetup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dir, answer string
		trustErr          error
		approves          bool
		refusal           string
	}{
		{name: "approved", dir: "/src/app", answer: "y", approves: true},
		{name: "no directory", answer: "y", refusal: "trust setup needs the repository"},
		{name: "another word", dir: "/src/app", answer: "maybe", refusal: "trust setup is y or empty"},
		{name: "approval fails", dir: "/src/app", answer: "yes", trustErr: errors.New("/src/app has no .termsprawl/worktree.json nor .termsprawl/policy.toml"), approves: true, refusal: "not approved: /src/app has no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t)
			f.setReply(func(c call) tools.Result {
				return tools.OKResult(json.RawMessage(`{"action":"terminal_launch","result":{"terminal":"new1","name":"new1"}}`))
			})
			var mu sync.Mutex
			var trusted []string
			f.trust = func(dir string) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				trusted = append(trusted, dir)
				if tc.trustErr != nil {
					return "", tc.trustErr
				}
				return "approved worktree.json of " + dir + " at their current content", nil
			}
			tm, _ := start(t, f, fleet(), 120, 30)
			tm.Send(key("n"))
			waitModel(t, tm, "the form", frameHas("trust setup: "+TrustHint))
			tm.Send(key("tab"))
			tm.Send(key("tab"))
			tm.Type(tc.dir)
			tm.Send(key("tab"))
			tm.Type("fix")
			tm.Send(key("tab"))
			tm.Type(tc.answer)
			tm.Send(key("enter")) // to the command field
			tm.Send(key("enter"))
			if tc.refusal != "" {
				waitModel(t, tm, "the refusal", func(m *Model) bool { return strings.Contains(m.launchErr, tc.refusal) })
				f.noCall()
			} else {
				if c := f.nextCall("terminal_launch"); c.args["cwd"] != tc.dir {
					t.Fatalf("launch %v", c.args)
				}
				waitModel(t, tm, "launched, saying what was approved", func(m *Model) bool {
					return strings.Contains(m.message, "launched new1 · approved worktree.json of "+tc.dir)
				})
			}
			mu.Lock()
			defer mu.Unlock()
			if got := len(trusted) > 0; got != tc.approves || (got && trusted[0] != tc.dir) {
				t.Fatalf("approved %q, want approval %v of %s", trusted, tc.approves, tc.dir)
			}
		})
	}
}
