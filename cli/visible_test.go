package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// hostile is outside text that drives a terminal when printed raw: OSC 52
// (sets the clipboard), erase-line and cursor-up (a row hides itself), a
// C1 CSI, BEL, and a bidi override.
const hostile = "x\x1b]52;c;eA==\a\x1b[2K\x1b[1A\u009b2J\u202e ls ; rm -rf ~/work"

// rawControl reports the first control of s that is not a line break or
// a tab (tabwriter's padding is spaces), "" when there is none.
func rawControl(s string) string {
	for _, l := range strings.Split(s, "\n") {
		l = strings.ReplaceAll(l, "\t", " ")
		if tools.NeedsVisible(l) {
			return l
		}
	}
	return ""
}

// hostileReply answers every listing operation with hostile strings in
// every string field a human surface prints.
func hostileReply(_ context.Context, op string, _ json.RawMessage) tools.Result {
	h := hostile
	var v any
	switch op {
	case "terminal_list":
		v = tools.NodeList{Terminals: []tools.NodeInfo{{Terminal: "n1", Name: h, Command: []string{"sh", "-c", h}, Owner: h, Status: tools.StatusRunning, Kind: tools.KindShell}}}
	case "dialog_list":
		v = tools.DialogList{Dialogs: []tools.Dialog{{ID: "dialog-1", Node: h, Kind: "permission", Title: "Bash: " + strings.Repeat("ls ", 40) + h, Tool: h, Input: h, Options: []string{h}, Created: time.Now()}}}
	case "agent_status":
		v = tools.AgentList{Agents: []tools.AgentInfo{{Node: "n1", Name: h, Agent: "claude", State: h, Message: h, Why: []tools.Evidence{{Source: h, Event: h, At: "2026-12-07T00:00:00Z", Detail: h}}}}}
	case "worktree_diff":
		v = tools.WorktreeDiff{Node: "n1", Path: h, Branch: h, Diff: "diff --git a/f b/f\n+" + h + "\n", Cut: h, Turns: []tools.WorktreeTurn{{Turn: 1, At: h, Head: h}}}
	case "worktree_list":
		v = tools.WorktreeList{Worktrees: []tools.WorktreeEntry{{Name: h, Path: h, Branch: h, Node: h, Exists: true}}}
	case "host_list":
		v = tools.HostList{Hosts: []tools.HostInfo{{Name: h, Dest: h, State: h, Error: h}}}
	case "terminal_snapshot":
		v = tools.Snapshot{Terminal: "n1", Screen: tools.Screen{Lines: []string{h}}}
	case "agent_send":
		return tools.ErrResult(tools.Errorf(tools.KindConflict, "%s", h))
	default:
		return tools.ErrResult(tools.Errorf(tools.KindNotFound, "no such thing: %s", h))
	}
	return tools.OKResult(v)
}

// Every human CLI surface shows outside text with its controls made
// visible (CONTRACT §26, issue 34 item 2); --json keeps the exact
// strings, JSON-escaped.
func TestHumanSurfacesShowOutsideTextVisible(t *testing.T) {
	fs := newFakeState(t)
	t.Setenv("TERMSPRAWL_HOME", fs.Dir)
	t.Setenv(SessionEnv, "")
	fs.Backend.SetReply(hostileReply)
	surfaces := [][]string{
		{"ls"}, {"dialogs"}, {"why", "n1"}, {"diff", "n1"}, {"worktrees"}, {"hosts"}, {"snapshot", "n1"},
		{"kill", "n1"}, // an error that quotes outside text
		{"doctor"},
	}
	for _, args := range surfaces {
		code, out, errb := runHuman(t, args...)
		if out+errb == "" {
			t.Errorf("%v: printed nothing (exit %d)", args, code)
		}
		if l := rawControl(out); l != "" {
			t.Errorf("%v: a raw control on stdout: %q", args, l)
		}
		if l := rawControl(errb); l != "" {
			t.Errorf("%v: a raw control on stderr: %q", args, l)
		}
	}
	// dialogs keeps the dangerous tail and says how to see all.
	_, out, _ := runHuman(t, "dialogs")
	if !strings.Contains(out, "rm -rf ~/work") || !strings.Contains(out, "termsprawl dialogs --json") {
		t.Errorf("dialogs hides the tail or how to see all:\n%s", out)
	}
	// The picker (C-b a's popup).
	var pout bytes.Buffer
	h := &human{ctx: context.Background(), cmd: "pick", stateDir: fs.Dir, stdout: &pout, stderr: &pout, socket: tools.DefaultSocket}
	h.pick(strings.NewReader("1\nq\nq\n"))
	if pout.Len() == 0 || !strings.Contains(pout.String(), "^[]52") {
		t.Errorf("pick shows no made-visible text:\n%s", pout.String())
	}
	if l := rawControl(pout.String()); l != "" {
		t.Errorf("pick: a raw control: %q", l)
	}
	// --json: the exact strings.
	_, out, _ = runHuman(t, "ls", "--json")
	var l tools.NodeList
	if err := json.Unmarshal([]byte(out), &l); err != nil || len(l.Terminals) != 1 || l.Terminals[0].Name != hostile {
		t.Errorf("ls --json: %v %+v", err, l)
	}
	if rawControl(out) != "" {
		t.Errorf("ls --json prints a raw control: %q", out)
	}
}

func TestClipMiddleKeepsTheEnd(t *testing.T) {
	t.Parallel()
	got, cut := clipMiddle("Bash: "+strings.Repeat("ls ", 30)+"; rm -rf ~/work", 40)
	if !cut || !strings.HasSuffix(got, "rm -rf ~/work") || !strings.Contains(got, "…") || len([]rune(got)) != 40 {
		t.Fatalf("%q cut %v", got, cut)
	}
	if got, cut := clipMiddle("short\x1b", 40); cut || got != "short^[" {
		t.Fatalf("%q cut %v", got, cut)
	}
}
