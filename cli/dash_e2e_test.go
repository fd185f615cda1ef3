package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// dashNode is a dashboard running in a termsprawl node, driven with
// termsprawl's own tools as the operator: snapshot, press, type, wait_for.
type dashNode struct {
	e  *e2e
	id string
}

// op calls one operation as the operator (the same client every surface
// uses) and fails the test unless it succeeds.
func (e *e2e) op(op string, args any, v any) tools.Result {
	e.t.Helper()
	raw, res := e.call(op, args)
	if !res.OK {
		e.t.Fatalf("%s %s: %s (%s)", op, raw, res.Error, res.Kind)
	}
	if v != nil {
		if err := tools.DecodeValue(res.Value, v); err != nil {
			e.t.Fatalf("%s: %v", op, err)
		}
	}
	return res
}

func (d *dashNode) screen() string {
	d.e.t.Helper()
	var s tools.Snapshot
	d.e.op("terminal_snapshot", map[string]any{"terminal": d.id}, &s)
	return strings.Join(s.Lines, "\n")
}

// wait polls terminal_snapshot until the dashboard's screen satisfies ok.
func (d *dashNode) wait(what string, ok func(string) bool) string {
	d.e.t.Helper()
	var s string
	if !testenv.Until(30*time.Second, func() bool { s = d.screen(); return ok(s) }) {
		d.e.t.Fatalf("the dashboard never showed %s; it shows:\n%s", what, s)
	}
	return s
}

func (d *dashNode) waitText(text string) string {
	d.e.t.Helper()
	return d.wait(quoted(text), func(s string) bool { return strings.Contains(s, text) })
}

func quoted(s string) string { b, _ := json.Marshal(s); return string(b) }

// waitSemantic waits until the dashboard's semantic tree (in
// terminal_snapshot) has a line containing each of want.
func (d *dashNode) waitSemantic(want ...string) {
	d.e.t.Helper()
	var s tools.Snapshot
	var tree, missing string
	if !testenv.Until(30*time.Second, func() bool {
		s = tools.Snapshot{}
		d.e.op("terminal_snapshot", map[string]any{"terminal": d.id}, &s)
		tree = strings.Join(s.Semantic, "\n")
		missing = ""
		for _, w := range want {
			if !strings.Contains(tree, w) {
				missing = w
				break
			}
		}
		return missing == ""
	}) {
		d.e.t.Fatalf("the dashboard's semantic tree has no %s:\n%s\nscreen:\n%s", missing, tree, strings.Join(s.Lines, "\n"))
	}
}

// press presses chords in the dashboard's node.
func (d *dashNode) press(keys string) {
	d.e.t.Helper()
	d.e.op("terminal_press", map[string]any{"terminal": d.id, "keys": keys}, nil)
}

// typ types text into the dashboard's node.
func (d *dashNode) typ(text string) {
	d.e.t.Helper()
	d.e.op("terminal_type", map[string]any{"terminal": d.id, "text": text}, nil)
}

// latency submits cmd in node, whose output shows text, and returns how
// long after text appeared in node it appeared in the dashboard's
// preview: two terminal_wait_for calls (event-driven), one per node, from
// the revisions before the submit.
func (d *dashNode) latency(node, text, cmd string) time.Duration {
	d.e.t.Helper()
	rev := func(id string) uint64 {
		var s tools.Snapshot
		d.e.op("terminal_snapshot", map[string]any{"terminal": id}, &s)
		return s.Revision
	}
	type seen struct {
		at  time.Time
		res tools.Result
	}
	waitIn := func(id string, after uint64) <-chan seen {
		ch := make(chan seen, 1)
		raw, _ := json.Marshal(map[string]any{"terminal": id, "wait": "text", "text": text, "after": after, "timeout_ms": 20000})
		go func() {
			res := tools.Call(context.Background(), d.e.oper, tools.Request{Operation: "terminal_wait_for", Args: raw}, tools.CallOptions{})
			ch <- seen{time.Now(), res}
		}()
		return ch
	}
	inNode, inDash := waitIn(node, rev(node)), waitIn(d.id, rev(d.id))
	time.Sleep(100 * time.Millisecond) // both waits registered
	d.e.op("terminal_submit", map[string]any{"terminal": node, "text": cmd}, nil)
	a, b := <-inNode, <-inDash
	if !a.res.OK || !b.res.OK {
		d.e.t.Fatalf("wait_for %q: in the node %s; in the dashboard %s\n%s", text, a.res.Error, b.res.Error, d.screen())
	}
	return b.at.Sub(a.at)
}

// loggingTmux writes a tmux that logs its arguments and runs the real
// one; it returns the log and a PATH with it first.
func loggingTmux(t *testing.T) (log, path string) {
	t.Helper()
	real, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	log = filepath.Join(bin, "tmux.log")
	script := "#!/bin/sh\necho \"$@\" >> " + log + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "tmux"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return log, bin + string(filepath.ListSeparator) + os.Getenv("PATH")
}

// nodeScreen is another node's screen text.
func (e *e2e) nodeScreen(id string) string {
	var s tools.Snapshot
	e.op("terminal_snapshot", map[string]any{"terminal": id}, &s)
	return strings.Join(s.Lines, "\n")
}

// call runs op as the operator, in process; it answers the arguments as
// sent and the result.
func (e *e2e) call(op string, args any) (json.RawMessage, tools.Result) {
	raw, _ := json.Marshal(args)
	return raw, tools.Call(context.Background(), e.oper, tools.Request{Operation: op, Args: raw}, tools.CallOptions{})
}

// screenIfAny is nodeScreen that returns "" when the call fails (the
// node or the orchestrator is on its way back).
func (e *e2e) screenIfAny(id string) string {
	_, res := e.call("terminal_snapshot", map[string]any{"terminal": id})
	var s tools.Snapshot
	if !res.OK || tools.DecodeValue(res.Value, &s) != nil {
		return ""
	}
	return strings.Join(s.Lines, "\n")
}

func (e *e2e) listed(name string) (tools.NodeInfo, bool) {
	var l tools.NodeList
	e.op("terminal_list", map[string]any{}, &l)
	for _, n := range l.Terminals {
		if n.Name == name || n.Terminal == name {
			return n, true
		}
	}
	return tools.NodeInfo{}, false
}

// selectByFilter narrows the list to one node with `/` and keeps the
// filter (its row is then the selected one).
func (d *dashNode) selectByFilter(name string) {
	d.e.t.Helper()
	d.typ("/")
	d.waitText("filter:")
	d.typ(name)
	d.press("Enter")
	d.waitText(`filter "` + name + `": 1 shown`)
}

func (d *dashNode) clearFilter() {
	d.e.t.Helper()
	d.typ("/")
	d.waitText("filter:")
	d.press("C-u")
	d.press("Enter")
	d.wait("the filter cleared", func(s string) bool { return !strings.Contains(s, `filter "`) })
}

// The dashboard in a termsprawl node, driven with termsprawl's own tools:
// it opens on the fleet, shows a node's output live (the latency is
// logged), filters, types into a node in focus mode, answers allow and
// deny with a reason (the agents get the decisions), says when a dialog
// was answered elsewhere, closes a node after asking, launches one,
// attaches and comes back on detach, ends focus when the node closes,
// shrinks to the list under 80×24, says "reconnecting" while termsprawl
// restarts and comes back, and quits leaving the nodes running.
func TestDashboardE2E(t *testing.T) {
	t.Parallel()
	e := newE2E(t)

	// Not running: exit 3 and how to start it.
	code, _, errOut := e.run(e.ts, "dash")
	if code != ExitNotRunning || !strings.Contains(errOut, "termsprawl up") {
		t.Fatalf("dash while not running: exit %d, %q; want 3 naming termsprawl up", code, errOut)
	}

	up, _ := e.up()
	work := strings.TrimSpace(e.must(e.ts, "new", "--name", "work", "--", "bash", "--norc", "--noprofile"))
	e.submit(e.oper, work, "PS1='$ '; echo ready-$((1+1))", "ready-2")

	// A node's own session is refused, saying why.
	code, _, errOut = e.run(e.ts, "dash", "--session", tools.SessionPath(e.state, work))
	if code != ExitUsage || !strings.Contains(errOut, "cannot watch and answer for a human") {
		t.Fatalf("dash with a node's session: exit %d, %q", code, errOut)
	}

	// The dashboard runs in a node: inside it TERMSPRAWL_SESSION_FILE is
	// the node's own, and termsprawl uses the operator's session of the
	// node's TERMSPRAWL_HOME (CONTRACT §10).
	// A tmux first on its PATH logs each run: the dashboard runs tmux only
	// to attach.
	tmuxLog, path := loggingTmux(t)
	var rec tools.ReceiptOf[tools.NodeInfo]
	e.op("terminal_launch", map[string]any{"name": "dash", "command": []string{"env", "PATH=" + path, e.ts, "dash"}, "columns": 140, "rows": 40}, &rec)
	d := &dashNode{e: e, id: rec.Result.Terminal}
	s := d.waitText("2 nodes · 0 need you")
	if !strings.Contains(s, "◆dash") || !strings.Contains(s, "work") {
		t.Fatalf("the list does not show work and mark its own node:\n%s", s)
	}

	// Select work: its screen in the preview, then live output.
	d.typ("j")
	d.waitText("ready-2")
	t.Logf("output → preview: %v (the marker's time in work to its time in the dashboard, both seen by terminal_wait_for)", d.latency(work, "MARK-42", "echo MARK-$((6*7))"))

	// Filter.
	d.selectByFilter("wor")
	d.clearFilter()

	// r toggles work's recording; tab shows it.
	recording := func(want bool) {
		t.Helper()
		if !testenv.Until(20*time.Second, func() bool { n, _ := e.listed(work); return (n.Recording != nil) == want }) {
			t.Fatalf("work's recording is not %v after r; dashboard:\n%s", want, d.screen())
		}
	}
	d.typ("r")
	recording(true)
	d.press("Tab Tab")
	d.waitText("recording since")
	d.typ("r")
	recording(false)
	d.waitText("is not recorded")
	d.press("Tab")
	d.waitText("no application logs")
	d.press("Tab")
	d.waitText("work has no worktree") // the diff tab
	d.press("Tab")
	d.waitText("ready-2")

	// Focus: keys go to work until C-].
	d.typ("i")
	d.waitText("FOCUS → " + work)
	d.typ("echo focus-$((3+4))")
	d.press("Enter")
	if !testenv.Until(20*time.Second, func() bool { return strings.Contains(e.nodeScreen(work), "focus-7") }) {
		t.Fatalf("focus typing never reached work:\n%s", e.nodeScreen(work))
	}
	d.press("C-]")
	d.waitText("focus ended")

	// Answers: a permission allowed, one denied with a reason.
	ask := func(title string) (*proc, *syncBuffer) {
		b, _ := json.Marshal(map[string]any{"kind": "permission", "title": title, "wait_ms": 40000})
		out := &syncBuffer{}
		return e.start(e.ctl, out, &syncBuffer{}, "--session", tools.SessionPath(e.state, work), "call", "dialog_request", string(b)), out
	}
	outcome := func(p *proc, out *syncBuffer) tools.DialogOutcome {
		t.Helper()
		if !p.waitExit(20 * time.Second) {
			t.Fatalf("dialog_request did not return; dashboard:\n%s", d.screen())
		}
		var r struct {
			OK    bool                `json:"ok"`
			Value tools.DialogOutcome `json:"value"`
		}
		if err := json.Unmarshal([]byte(out.String()), &r); err != nil || !r.OK {
			t.Fatalf("dialog_request: %s (%v)", out.String(), err)
		}
		return r.Value
	}
	p, out := ask("Bash: npm test")
	e.waitDialog(work, 20*time.Second)
	d.waitText("1 need you")
	// The dashboard's own tree (probe): a listitem per node and the
	// answers as buttons; an agent clicks "allow" by role and name.
	d.waitSemantic(`listitem "work"`, `button "allow"`, `button "deny"`)
	e.op("terminal_click", map[string]any{"terminal": d.id, "locator": map[string]any{"role": "button", "name": "allow"}}, nil)
	if o := outcome(p, out); o.Answer.Mode != tools.AnswerAllow {
		t.Fatalf("the agent got %+v, want allow", o.Answer)
	}
	d.waitText("answered")
	p, out = ask("Bash: rm -rf /")
	e.waitDialog(work, 20*time.Second)
	d.waitText("1 need you")
	d.typ("d")
	d.waitText("reason:")
	d.typ("never on this machine")
	d.press("Enter")
	if o := outcome(p, out); o.Answer.Mode != tools.AnswerDeny || o.Answer.Reason != "never on this machine" {
		t.Fatalf("the agent got %+v, want deny with the reason", o.Answer)
	}

	// Answered elsewhere while the reason is being typed here.
	p, out = ask("Bash: make deploy")
	dl := e.waitDialog(work, 20*time.Second)
	d.waitText("1 need you")
	d.typ("d")
	d.waitText("reason:")
	e.must(e.ts, "answer", dl.ID, "allow")
	outcome(p, out)
	d.waitText("was already answered")

	// Attach and return: enter runs a tmux client of work's server in
	// the dashboard's terminal; C-b d detaches back to the dashboard.
	// tmux takes a key that follows other input within assume-paste-time
	// (1 ms) for a paste and types it into the pane; under load the
	// client's start-up input (the outer terminal's focus report) came in
	// one read with C-b, and C-b reached bash. No human types that fast:
	// the test's server does not guess pastes.
	e.tmux.Must("set-option", "-g", "assume-paste-time", "0")
	d.typ("\r")
	if !testenv.Until(20*time.Second, func() bool {
		return strings.Contains(e.tmux.Must("list-clients", "-t", "=ts-"+work, "-F", "#{client_control_mode}"), "0")
	}) {
		t.Fatalf("no human client on ts-%s after enter; dashboard:\n%s", work, d.screen())
	}
	d.wait("work's screen through the attach", func(s string) bool {
		return strings.Contains(s, "focus-7") && !strings.Contains(s, "nodes ·")
	})
	// C-b, then d once tmux has put the client in its prefix table, as a
	// human presses them (not "C-b d" in one send-keys).
	d.press("C-b")
	if !testenv.Until(20*time.Second, func() bool {
		return slices.Contains(strings.Split(e.tmux.Must("list-clients", "-t", "=ts-"+work, "-F", "#{client_control_mode} #{client_prefix}"), "\n"), "0 1")
	}) {
		t.Fatalf("the client on ts-%s is not in the prefix table after C-b; dashboard:\n%s", work, d.screen())
	}
	d.press("d")
	d.waitText("detached: back in the dashboard")

	// Close with confirm.
	victim := strings.TrimSpace(e.must(e.ts, "new", "--name", "victim", "--", "bash", "--norc", "--noprofile"))
	d.waitText("3 nodes")
	d.selectByFilter("victim")
	d.typ("x")
	d.waitText("close node " + victim + "?")
	d.typ("y")
	if !testenv.Until(20*time.Second, func() bool {
		if _, ok := e.listed(victim); !ok {
			return true
		}
		return false
	}) {
		t.Fatalf("victim still listed after x, y; dashboard:\n%s", d.screen())
	}
	d.clearFilter()

	// Closed while focused.
	doomed := strings.TrimSpace(e.must(e.ts, "new", "--name", "doomed", "--", "bash", "--norc", "--noprofile"))
	d.waitText("3 nodes")
	d.selectByFilter("doomed")
	d.typ("i")
	d.waitText("FOCUS → " + doomed)
	e.must(e.ts, "kill", doomed)
	d.waitText("node " + doomed + " was closed: focus ended")
	d.clearFilter()

	// Launch: n, kind shell, a name, the default directory.
	d.typ("n")
	d.waitText("kind: shell")
	d.press("Tab")
	d.typ("fresh")
	d.press("Enter") // to the directory
	d.press("Enter") // to the worktree (empty: none)
	d.press("Enter") // to the trust setup (empty: no approval)
	d.press("Enter") // to the command (empty: the shell)
	d.press("Enter") // launch
	if !testenv.Until(20*time.Second, func() bool {
		if _, ok := e.listed("fresh"); ok {
			return true
		}
		return false
	}) {
		t.Fatalf("n did not launch fresh; dashboard:\n%s", d.screen())
	}
	d.waitText("launched")

	// Under 80×24: the list only, saying so; back to the preview.
	e.op("terminal_resize", map[string]any{"terminal": d.id, "columns": 70, "rows": 20}, nil)
	d.waitText("70×20 is under 80×24: list only")
	e.op("terminal_resize", map[string]any{"terminal": d.id, "columns": 140, "rows": 40}, nil)
	d.waitText("screen   dialogs")

	// termsprawl restarts while the dashboard is open.
	dn, _ := e.listed(d.id)
	e.down(up)
	raw := func() string {
		out, err := exec.Command("tmux", "-L", dn.TmuxSocket, "capture-pane", "-p", "-t", "ts-"+d.id).CombinedOutput()
		if err != nil {
			t.Fatalf("capture-pane of the dashboard while termsprawl is down: %v\n%s", err, out)
		}
		return string(out)
	}
	if !testenv.Until(20*time.Second, func() bool { return strings.Contains(raw(), "reconnecting…") }) {
		t.Fatalf("no reconnecting while termsprawl is down:\n%s", raw())
	}
	up, _ = e.up()
	d.wait("the dashboard back after the restart", func(s string) bool {
		return strings.Contains(s, "nodes ·") && !strings.Contains(s, "reconnecting")
	})

	// q quits; the nodes keep running.
	d.typ("q")
	if !testenv.Until(20*time.Second, func() bool {
		n, _ := e.listed(d.id)
		return n.Status == tools.StatusExited
	}) {
		t.Fatalf("the dashboard did not quit on q:\n%s", d.screen())
	}
	if n, ok := e.listed(work); !ok || n.Status != tools.StatusRunning {
		t.Fatalf("work after the dashboard quit: %+v", n)
	}
	runs, _ := os.ReadFile(tmuxLog)
	attaches := 0
	for l := range strings.SplitSeq(strings.TrimSpace(string(runs)), "\n") {
		if strings.Contains(l, " attach-session ") {
			attaches++
			continue
		}
		t.Errorf("the dashboard ran tmux %s (only enter's attach may run tmux)", l)
	}
	if attaches != 1 {
		t.Errorf("%d tmux attaches, want 1 (enter)", attaches)
	}
	e.down(up)
}
