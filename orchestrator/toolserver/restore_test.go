package toolserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// terminal_restore and terminal_forget are the operator's; up --restore
// (Config.RestoreLost) restores every lost node once, and a later start
// finds nothing lost to restore again. A restored node has a new token,
// and what belonged to the old one (its agent state) is not carried.
func TestRestoreOverTheAPI(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 12 s on a loaded 2-core machine")
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	shell := apiLaunch(t, s.op(), "sh", "-c", "echo restore-me; exec cat")
	apiWaitScreen(t, s.op(), shell, "restore-me")
	r, _ := apiMutate(t, s.op(), "agent_launch", apiM{"agent": "custom", "command": []string{"cat"}, "name": "ag"})
	var ag tools.NodeInfo
	if err := json.Unmarshal(r.Result, &ag); err != nil {
		t.Fatal(err)
	}
	apiOK(t, s.session(ag.Terminal), "agent_report", apiM{"state": "working", "conversation": "conv-1"}, nil)
	oldToken := apiToken(t, s.session(shell))
	s.stop()
	if _, err := tmux.Cmd("kill-server"); err != nil {
		t.Fatal(err)
	}

	s2 := apiStart(t, tmux, dir)
	var l tools.NodeList
	apiOK(t, s2.op(), "terminal_list", nil, &l)
	for _, n := range l.Terminals {
		if n.Status != tools.StatusLost || n.State != tools.StatusLost {
			t.Errorf("after the reboot: %+v", n)
		}
	}
	snap := apiSnapshot(t, s2.op(), shell)
	if snap.Status != tools.StatusLost {
		t.Fatalf("snapshot of a lost node: %+v", snap)
	}
	// An agent may not restore or forget.
	other := apiLaunch(t, s2.op(), "cat")
	apiFail(t, s2.session(other), "terminal_restore", apiM{"terminal": shell}, tools.KindForbidden)
	apiFail(t, s2.session(other), "terminal_forget", apiM{"terminal": shell}, tools.KindForbidden)
	apiFail(t, s2.op(), "terminal_restore", apiM{"terminal": other}, tools.KindConflict)
	apiFail(t, s2.op(), "terminal_forget", apiM{"terminal": other}, tools.KindConflict)
	apiFail(t, s2.op(), "terminal_type", apiM{"terminal": shell, "text": "x"}, tools.KindConflict)

	rr, _ := apiMutate(t, s2.op(), "terminal_restore", apiM{"terminal": shell})
	var res tools.RestoreResult
	if err := json.Unmarshal(rr.Result, &res); err != nil {
		t.Fatal(err)
	}
	if res.Terminal != shell || res.Status != tools.StatusRunning {
		t.Fatalf("restore result %s", rr.Result)
	}
	apiWaitScreen(t, s2.op(), shell, "restore-me")
	if tok := apiToken(t, s2.session(shell)); tok == oldToken {
		t.Fatal("the restored node kept its old token")
	}
	apiOK(t, s2.session(shell), "session_info", nil, nil) // its new token works
	s2.stop()
	if _, err := tmux.Cmd("kill-server"); err != nil {
		t.Fatal(err)
	}

	// up --restore: the three lost nodes (the agent resumes nothing: a custom
	// program), then a start that finds none.
	s3 := apiStartWith(t, tmux, dir, orchestrator.Config{RestoreLost: true})
	got := map[string]tools.RestoreResult{}
	for _, r := range s3.info.Restored {
		got[r.Terminal] = r
	}
	if len(got) != 3 || got[other].Terminal == "" || len(s3.info.RestoreErrors) != 0 || len(s3.info.Lost) != 0 {
		t.Fatalf("up --restore: %+v errors %v lost %v", s3.info.Restored, s3.info.RestoreErrors, s3.info.Lost)
	}
	if a := got[ag.Terminal]; a.Resumed != "" || !strings.Contains(a.FreshStart, "not custom's own program") {
		t.Fatalf("a custom agent's restore: %+v", a)
	}
	var st tools.AgentList
	apiOK(t, s3.op(), "agent_status", apiM{"node": ag.Terminal}, &st)
	if len(st.Agents) != 1 || st.Agents[0].State == tools.AgentWorking {
		t.Fatalf("the old agent state was carried over: %+v", st.Agents)
	}
	s3.stop()
	s4 := apiStartWith(t, tmux, dir, orchestrator.Config{RestoreLost: true})
	if len(s4.info.Restored) != 0 || len(s4.info.Lost) != 0 {
		t.Fatalf("a second up --restore restored %+v", s4.info.Restored)
	}
}

// Each agent kind resumes its conversation its own way after a reboot
// (Claude Code and Gemini CLI --resume ID, Codex `codex resume ID`);
// opencode, which reports none, starts fresh and says so; an agent whose
// program is gone is refused and stays lost.
func TestRestoreResumesEachAgentKind(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 17 s on a loaded 2-core machine")
	out := fakeAgents(t)
	bin := filepath.SplitList(os.Getenv("PATH"))[0]
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GEMINI_CLI_SYSTEM_DEFAULTS_PATH", "")
	tmux, dir := apiNewState(t)
	ctl := "/opt/termsprawl/bin/termsprawlctl"
	s := startWithCtl(t, tmux, dir, ctl)
	kinds := []string{"claude", "codex", "gemini", "opencode"}
	ids := map[string]string{}
	for _, kind := range kinds {
		r, _ := apiMutate(t, s.op(), "agent_launch", apiM{"agent": kind, "sandbox": "none"}) // the fake agents write outside their directory
		var info tools.NodeInfo
		if err := json.Unmarshal(r.Result, &info); err != nil {
			t.Fatal(err)
		}
		ids[kind] = info.Terminal
		waitFile(t, filepath.Join(out, kind+".txt"))
		if kind != "opencode" {
			apiOK(t, s.session(info.Terminal), "agent_report", apiM{"event": "SessionStart", "conversation": "conv-" + kind}, nil)
		}
	}
	s.stop()
	if _, err := tmux.Cmd("kill-server"); err != nil {
		t.Fatal(err)
	}
	for _, kind := range kinds {
		os.Remove(filepath.Join(out, kind+".txt"))
	}
	gemini, err := os.ReadFile(filepath.Join(bin, "gemini"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(bin, "gemini")); err != nil { // uninstalled meanwhile
		t.Fatal(err)
	}

	s2 := startWithCtl(t, tmux, dir, ctl)
	res := apiFail(t, s2.op(), "terminal_restore", apiM{"terminal": ids["gemini"]}, tools.KindNotRun)
	if !strings.Contains(res.Error, "gemini is not installed") {
		t.Fatalf("restore of an agent whose program is gone: %s", res.Error)
	}
	var l tools.NodeList
	apiOK(t, s2.op(), "terminal_list", nil, &l)
	for _, n := range l.Terminals {
		if n.Terminal == ids["gemini"] && n.Status != tools.StatusLost {
			t.Fatalf("after a refused restore: %+v", n)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "gemini"), gemini, 0o755); err != nil { // installed again
		t.Fatal(err)
	}
	want := map[string]func([]string) bool{
		"gemini": func(a []string) bool { return strings.Join(a[len(a)-2:], " ") == "--resume conv-gemini" },
		"claude": func(a []string) bool { return strings.Join(a[len(a)-2:], " ") == "--resume conv-claude" },
		"codex":  func(a []string) bool { return strings.Join(a[:2], " ") == "resume conv-codex" },
		"opencode": func(a []string) bool {
			return !slices.Contains(a, "--resume") && !slices.Contains(a, "resume")
		},
	}
	for kind, ok := range want {
		rr, _ := apiMutate(t, s2.op(), "terminal_restore", apiM{"terminal": ids[kind]})
		var r tools.RestoreResult
		if err := json.Unmarshal(rr.Result, &r); err != nil {
			t.Fatal(err)
		}
		argv := strings.Split(strings.TrimSpace(waitFile(t, filepath.Join(out, kind+".txt"))), "\n")
		argv = slices.DeleteFunc(argv, func(a string) bool { return strings.HasPrefix(a, "GEMINI=") || strings.HasPrefix(a, "OPENCODE=") })
		if !ok(argv) {
			t.Errorf("%s restored with argv %q", kind, argv)
		}
		switch {
		case kind == "opencode" && (r.Resumed != "" || !strings.Contains(r.FreshStart, "reports no conversation id")):
			t.Errorf("opencode's restore: %+v", r)
		case kind != "opencode" && (r.Resumed != "conv-"+kind || r.FreshStart != ""):
			t.Errorf("%s's restore: %+v", kind, r)
		}
	}
}

// A worktree node lost in a reboot is restored in its worktree, tied to
// it again, and its setup does not run a second time (CONTRACT §21, §25).
func TestRestoreWorktreeNode(t *testing.T) {
	t.Parallel()
	repo, same := wtRepo(t)
	defer same()
	tmux, dir := apiNewState(t)
	wtApprove(t, dir, repo)
	s := apiStart(t, tmux, dir)
	r, _ := apiMutate(t, s.op(), "terminal_launch", apiM{"command": []string{"sh", "-c", "pwd >> where.log; echo PROGRAM-UP; exec cat"}, "cwd": repo, "name": "wtnode", "worktree": apiM{"branch": "boot"}})
	var node tools.NodeInfo
	if err := json.Unmarshal(r.Result, &node); err != nil {
		t.Fatal(err)
	}
	if first := apiWaitScreen(t, s.op(), node.Terminal, "PROGRAM-UP"); !strings.Contains(first, "SETUP-RAN") {
		t.Fatalf("the setup did not run at the launch:\n%s", first)
	}
	wtPath := filepath.Join(filepath.Dir(repo), filepath.Base(repo)+".worktrees", "boot")
	s.stop()
	if _, err := tmux.Cmd("kill-server"); err != nil {
		t.Fatal(err)
	}

	s2 := apiStart(t, tmux, dir)
	apiOK(t, s2.op(), "terminal_restore", apiM{"terminal": node.Terminal}, nil)
	if snap := apiWaitScreen(t, s2.op(), node.Terminal, "PROGRAM-UP"); strings.Contains(snap, "SETUP-RAN") {
		t.Fatalf("the setup ran again at the restore:\n%s", snap)
	}
	where, err := os.ReadFile(filepath.Join(wtPath, "where.log"))
	if err != nil || string(where) != wtPath+"\n"+wtPath+"\n" {
		t.Fatalf("the program ran in (where.log): %q, %v; want its worktree %s twice", where, err, wtPath)
	}
	var l tools.NodeList
	apiOK(t, s2.op(), "terminal_list", nil, &l)
	for _, n := range l.Terminals {
		if n.Terminal == node.Terminal && (n.Worktree == nil || n.Worktree.Path != wtPath) {
			t.Fatalf("the restored node is not tied to its worktree: %+v", n.Worktree)
		}
	}
	if out := wtGit(t, repo, "worktree", "list"); strings.Count(out, "\n") != 2 {
		t.Fatalf("a worktree was made again:\n%s", out)
	}
}
