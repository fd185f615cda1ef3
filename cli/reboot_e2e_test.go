package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/fakemodel"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// conversationText is every text block of a request's messages, by role.
func conversationText(req *fakemodel.Request, role string) string {
	var b strings.Builder
	for _, m := range req.Messages {
		if m.Role != role {
			continue
		}
		for _, bl := range m.Blocks() {
			b.WriteString(bl.Text + "\n")
		}
	}
	return b.String()
}

// The real Claude Code TUI survives a reboot (CONTRACT §25): its
// SessionStart session id is kept; after termsprawl is stopped and its
// tmux server killed, `up` lists it lost with its last screen, `up
// --restore` starts it with --resume and that id, and its next request
// to the Messages API carries the earlier conversation. Nothing is
// restored twice; a running node is neither restored nor forgotten.
func TestClaudeCodeSurvivesReboot(t *testing.T) {
	// Not parallel: the real Claude Code TUI on a loaded 2-core machine
	// swallowed a submitted line's Enter when three more end-to-end tests
	// ran beside it; it runs alone, before the parallel tests.
	e, fake, home, work := newClaudeE2E(t, claudeCodePackage, func(req *fakemodel.Request) fakemodel.Reply {
		if !req.HasTool("Bash") {
			return fakemodel.Reply{}
		}
		if strings.Contains(lastUserText(req), "what did I say") {
			return fakemodel.Reply{Blocks: []fakemodel.Block{{Text: "you said hello"}}}
		}
		return fakemodel.Reply{Blocks: []fakemodel.Block{{Text: "hello there"}}}
	})
	trustClaude(t, home, work)
	up, upErr := e.up()
	node := e.claudeTUI("tui", work)
	e.waitState(node, 30*time.Second, tools.AgentIdle)
	e.must(e.ts, "send", node, "say hello")
	e.waitWhy(node, 30*time.Second, "idle after a turn", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentIdle && hasEvidence(a, tools.SourceHook, "UserPromptSubmit")
	})
	// The conversation id its hooks reported, and its last screen, are on
	// disk (the screen within the keeper's 2 s).
	var conv string
	var screen string
	if !testenv.Until(20*time.Second, func() bool {
		var rec struct {
			Conversation string `json:"conversation"`
		}
		if b, err := os.ReadFile(filepath.Join(e.state, "nodes", node+".launch.json")); err == nil {
			_ = json.Unmarshal(b, &rec)
		}
		conv = rec.Conversation
		sb, _ := os.ReadFile(filepath.Join(e.state, "nodes", node+".screen.json"))
		screen = string(sb)
		return conv != "" && strings.Contains(screen, "hello there")
	}) {
		t.Fatalf("kept: conversation %q, screen %s", conv, screen)
	}
	if transcripts, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", conv+".jsonl")); len(transcripts) != 1 {
		t.Fatalf("the kept conversation %q is not Claude Code's session (no transcript named for it)", conv)
	}
	e.down(up)
	if upErr != nil && t.Failed() {
		t.Log(upErr.String())
	}
	// The reboot, as tmux sees it: its server is gone, and Claude with it.
	if _, err := e.tmux.Cmd("kill-server"); err != nil {
		t.Fatal(err)
	}

	up2, out2, err2 := e.upWith("--restore")
	defer e.down(up2)
	defer func() {
		if t.Failed() {
			t.Logf("termsprawl up --restore:\n%s\n%s", out2.String(), err2.String())
		}
	}()
	if !testenv.Until(10*time.Second, func() bool { return strings.Contains(out2.String(), "restored node "+node) }) {
		t.Fatalf("up --restore did not say it restored %s", node)
	}
	if !strings.Contains(out2.String(), "resuming claude's conversation "+conv) {
		t.Fatalf("up --restore's banner: %s", out2.String())
	}
	var list tools.NodeList
	if r := e.callValue(e.oper, "terminal_list", map[string]any{}, &list); !r.OK {
		t.Fatal(r.Error)
	}
	var row tools.NodeInfo
	for _, n := range list.Terminals {
		if n.Terminal == node {
			row = n
		}
	}
	cmd := strings.Join(row.Command, " ")
	if row.Status != tools.StatusRunning || row.Name != "tui" || !strings.Contains(cmd, "--resume "+conv) {
		t.Fatalf("restored row: %+v", row)
	}
	e.waitScreen(node, "shortcuts") // the resumed TUI's prompt (see claudeTUI)
	e.waitWhy(node, 30*time.Second, "idle after the restore", func(a tools.AgentInfo) bool {
		return a.State == tools.AgentIdle && hasEvidence(a, tools.SourceHook, "SessionStart")
	})
	e.must(e.ts, "send", node, "what did I say")
	var carried *fakemodel.Request
	if !testenv.Until(40*time.Second, func() bool {
		for _, r := range fake.Requests() {
			if strings.Contains(lastUserText(r), "what did I say") {
				carried = r
			}
		}
		return carried != nil
	}) {
		snap := e.must(e.ts, "snapshot", node)
		t.Fatalf("no request after the restore; screen:\n%s", snap)
	}
	if !strings.Contains(conversationText(carried, "user"), "say hello") || !strings.Contains(conversationText(carried, "assistant"), "hello there") {
		t.Fatalf("the request after the restore does not carry the earlier conversation: user %q assistant %q",
			conversationText(carried, "user"), conversationText(carried, "assistant"))
	}

	// Nothing is restored twice; a running node is neither restored nor
	// forgotten.
	if out := e.must(e.ts, "restore", "--all"); !strings.Contains(out, "no lost nodes") {
		t.Fatalf("restore --all after up --restore: %q", out)
	}
	if code, _, errb := e.run(e.ts, "restore", node); code != ExitNo || !strings.Contains(errb, "running, not lost") {
		t.Fatalf("restore of a running node: exit %d %q", code, errb)
	}
	if code, _, errb := e.run(e.ts, "forget", node); code != ExitNo || !strings.Contains(errb, "not lost") {
		t.Fatalf("forget of a running node: exit %d %q", code, errb)
	}
	if code, _, errb := e.run(e.ts, "restore", "no-such-node"); code != ExitNo || !strings.Contains(errb, "no node") {
		t.Fatalf("restore of an unknown node: exit %d %q", code, errb)
	}
	if sessions := e.tmux.Must("list-sessions", "-F", "#{session_name}"); strings.Count(sessions, "ts-"+node) != 1 {
		t.Fatalf("sessions: %s", sessions)
	}
}

// A reboot as tmux sees it, through the CLI: nodes on two shards, every
// tmux server killed while termsprawl is down; `up` lists them lost
// (ls, snapshot with when it was saved, doctor); `restore --all` brings
// them back in their directories, the recorded one recording on with a
// gap; the next `up` finds nothing to restore.
func TestE2ERebootRestoreAll(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	up, _, _ := e.upWith("--shard-size", "1")
	dirs := map[string]string{}
	for _, name := range []string{"alpha", "beta"} {
		dirs[name] = t.TempDir()
		id := strings.TrimSpace(e.must(e.ts, "new", "--name", name, "--cwd", dirs[name], "--", "sh", "-c", "echo hello-"+name+" in $(pwd); exec cat"))
		if id != name {
			t.Fatalf("new --name %s printed %q", name, id)
		}
		e.waitFor(name, "hello-"+name)
	}
	e.must(e.ts, "record", "beta")
	var list tools.NodeList
	if err := json.Unmarshal([]byte(e.must(e.ts, "ls", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	sockets := map[string]bool{}
	recDir := ""
	for _, n := range list.Terminals {
		sockets[n.TmuxSocket] = true
		if n.Recording != nil {
			recDir = n.Recording.Path
		}
	}
	if len(sockets) != 2 || recDir == "" {
		t.Fatalf("nodes: %+v", list.Terminals)
	}
	// Their last screens reach the disk within the keeper's 2 s.
	for _, name := range []string{"alpha", "beta"} {
		var b []byte
		if !testenv.Until(15*time.Second, func() bool {
			b, _ = os.ReadFile(filepath.Join(e.state, "nodes", name+".screen.json"))
			return strings.Contains(string(b), "hello-"+name)
		}) {
			t.Fatalf("%s's last screen was not kept: %s", name, b)
		}
	}
	e.down(up)
	for s := range sockets {
		if _, err := (&tmuxtest.Server{Socket: s}).Cmd("kill-server"); err != nil {
			t.Fatal(err)
		}
	}

	up2, out2, _ := e.upWith("--shard-size", "1")
	if !strings.Contains(out2.String(), "lost (their tmux server was gone): alpha, beta") {
		t.Errorf("up's banner does not name the lost nodes:\n%s", out2.String())
	}
	ls := e.must(e.ts, "ls")
	for _, name := range []string{"alpha", "beta"} {
		if !regexp.MustCompile(`(?m)^` + name + `\s.*\blost\b`).MatchString(ls) {
			t.Fatalf("ls after the reboot:\n%s", ls)
		}
	}
	code, snap, errb := e.run(e.ts, "snapshot", "alpha")
	if code != ExitOK || !strings.Contains(snap, "hello-alpha") || !strings.Contains(errb, "last screen, saved at") {
		t.Fatalf("snapshot of a lost node: exit %d\n%s\n%s", code, snap, errb)
	}
	if code, out, _ := e.run(e.ts, "doctor"); code != ExitNo || !strings.Contains(out, "termsprawl restore alpha") {
		t.Errorf("doctor with lost nodes: exit %d\n%s", code, out)
	}
	if code, _, errb := e.run(e.ts, "send", "alpha", "x"); code != ExitNo || !strings.Contains(errb, "lost") {
		t.Errorf("send to a lost node: exit %d %q", code, errb)
	}
	out := e.must(e.ts, "restore", "--all")
	for _, name := range []string{"alpha", "beta"} {
		if !strings.Contains(out, "restored node "+name+" in "+dirs[name]) {
			t.Fatalf("restore --all printed:\n%s", out)
		}
		if !testenv.Until(20*time.Second, func() bool { return strings.Contains(e.nodeScreen(name), "hello-"+name+" in "+dirs[name]) }) {
			t.Fatalf("restored %s does not show its start in %s", name, dirs[name])
		}
	}
	if !strings.Contains(out, "recording into "+recDir) {
		t.Fatalf("the recorded node does not record on: %s", out)
	}
	events, _ := os.ReadFile(filepath.Join(recDir, "events.jsonl"))
	if strings.Count(string(events), `"gap"`) != 1 {
		t.Fatalf("the recording has no gap:\n%s", events)
	}
	e.down(up2)
	up3, _, _ := e.upWith("--shard-size", "1", "--restore")
	if out := e.must(e.ts, "restore", "--all"); !strings.Contains(out, "no lost nodes") {
		t.Fatalf("restore --all after a plain restart: %q", out)
	}
	if err := json.Unmarshal([]byte(e.must(e.ts, "ls", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Terminals) != 2 || list.Terminals[0].Status != tools.StatusRunning || list.Terminals[1].Status != tools.StatusRunning {
		t.Fatalf("after the next up: %+v", list.Terminals)
	}
	// down --all ends them on purpose: the next up does not call them lost.
	e.must(e.ts, "down", "--all")
	if !up3.waitExit(15 * time.Second) {
		t.Fatal("up still runs after down --all")
	}
	up4, _, _ := e.upWith("--shard-size", "1")
	defer e.down(up4)
	if ls := e.must(e.ts, "ls"); !strings.Contains(ls, "no nodes") {
		t.Fatalf("after down --all and up:\n%s", ls)
	}
}
