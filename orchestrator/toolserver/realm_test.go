package toolserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/sshtest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// realmServe runs Serve with one host, rem, the sshd fixture's good
// alias (in its network namespace), granted launch_elsewhere or not.
func realmServe(t *testing.T, grant bool) *apiServe {
	t.Helper()
	f := sshtest.New(t)
	tmux := tmuxtest.New(t)
	dir := filepath.Join(t.TempDir(), "state")
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	host := tools.HostSpec{Name: "rem", Dest: sshtest.Good, SSHOptions: f.SSHOptions(), Socket: f.RemoteSocket,
		RemoteDir: f.RemoteDir("rem"), LaunchElsewhere: grant}
	return apiStartWith(t, tmux, dir, orchestrator.Config{Hosts: []tools.HostSpec{host}})
}

func realmLaunch(t *testing.T, sess string, args apiM) tools.NodeInfo {
	t.Helper()
	r, _ := apiMutate(t, sess, "terminal_launch", args)
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil || info.Terminal == "" {
		t.Fatalf("launch result %s: %v", r.Result, err)
	}
	return info
}

// An agent on host rem is kept to rem: its launches without a host land
// there (not on this machine, where it could read operator.json), "local"
// and the nodes of this machine are refused to it, and terminal_list
// shows it its host's nodes only. An agent on this machine and the
// operator are not kept.
func TestRemoteAgentKeptToItsHost(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 15 s on a loaded 2-core machine")
	t.Parallel()
	s := realmServe(t, false)
	op := s.op()
	local := realmLaunch(t, op, apiM{"command": []string{"sleep", "600"}, "cwd": t.TempDir()})
	rem := realmLaunch(t, op, apiM{"command": bashArgv(), "host": "rem"})
	if rem.Host != "rem" || local.Host != "" {
		t.Fatalf("the operator's launches: local on %q, rem on %q", local.Host, rem.Host)
	}
	agent := s.session(rem.Terminal)

	child := realmLaunch(t, agent, apiM{"command": []string{"sleep", "600"}})
	if child.Host != "rem" {
		t.Fatalf("a launch without host by the agent on rem landed on %q, want rem", child.Host)
	}
	r, _ := apiMutate(t, agent, "agent_launch", apiM{"agent": "custom", "command": []string{"sleep", "600"}})
	var ag tools.NodeInfo
	if err := json.Unmarshal(r.Result, &ag); err != nil || ag.Host != "rem" {
		t.Fatalf("agent_launch without host by the agent on rem: %s %v", r.Result, err)
	}
	apiFail(t, agent, "agent_launch", apiM{"agent": "custom", "command": []string{"sleep", "600"}, "host": tools.LocalHost}, tools.KindForbidden)
	res := apiFail(t, agent, "terminal_launch", apiM{"command": []string{"sleep", "600"}, "host": tools.LocalHost}, tools.KindForbidden)
	if !strings.Contains(res.Error, "launch_elsewhere") {
		t.Fatalf("the refusal does not say how to allow it: %s", res.Error)
	}
	for _, op := range []string{"terminal_snapshot", "terminal_read", "terminal_scrollback"} {
		apiFail(t, agent, op, apiM{"terminal": local.Terminal}, tools.KindForbidden)
	}
	apiFail(t, agent, "terminal_capture_since", apiM{"terminal": local.Terminal, "cursor": 0}, tools.KindForbidden)
	apiFail(t, agent, "terminal_type", apiM{"terminal": local.Terminal, "text": "x"}, tools.KindForbidden)
	apiFail(t, agent, "terminal_close", apiM{"terminal": local.Terminal}, tools.KindForbidden)
	apiOK(t, agent, "terminal_snapshot", apiM{"terminal": child.Terminal}, nil)

	var list tools.NodeList
	apiOK(t, agent, "terminal_list", nil, &list)
	for _, n := range list.Terminals {
		if n.Host != "rem" {
			t.Fatalf("terminal_list shows the agent on rem node %s on %q", n.Terminal, n.Host)
		}
	}
	if len(list.Terminals) != 3 {
		t.Fatalf("terminal_list shows the agent %d nodes, want its host's 3", len(list.Terminals))
	}

	// agent_status shows it its host's agents only.
	apiMutate(t, op, "agent_launch", apiM{"agent": "custom", "command": []string{"sleep", "600"}, "cwd": t.TempDir()})
	var agents tools.AgentList
	apiOK(t, agent, "agent_status", nil, &agents)
	if len(agents.Agents) != 1 || agents.Agents[0].Node != ag.Terminal {
		t.Fatalf("agent_status shows the agent on rem %+v, want only %s", agents.Agents, ag.Terminal)
	}
	apiOK(t, op, "agent_status", nil, &agents)
	if len(agents.Agents) != 2 {
		t.Fatalf("agent_status shows the operator %d agents, want 2", len(agents.Agents))
	}

	// A local agent is not kept; "local" names this machine.
	la := realmLaunch(t, op, apiM{"command": []string{"sleep", "600"}, "cwd": t.TempDir()})
	apiOK(t, s.session(la.Terminal), "terminal_snapshot", apiM{"terminal": rem.Terminal}, nil)
	if n := realmLaunch(t, s.session(la.Terminal), apiM{"command": []string{"sleep", "600"}, "host": tools.LocalHost}); n.Host != "" {
		t.Fatalf("host local landed on %q", n.Host)
	}
}

// With the operator's grant (launch_elsewhere) the agent on rem still
// launches on rem by default, and may launch on this machine and read it.
func TestRemoteAgentGranted(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 8 s on a loaded 2-core machine")
	t.Parallel()
	s := realmServe(t, true)
	op := s.op()
	local := realmLaunch(t, op, apiM{"command": []string{"sleep", "600"}, "cwd": t.TempDir()})
	rem := realmLaunch(t, op, apiM{"command": bashArgv(), "host": "rem"})
	agent := s.session(rem.Terminal)
	if n := realmLaunch(t, agent, apiM{"command": []string{"sleep", "600"}}); n.Host != "rem" {
		t.Fatalf("default launch on %q, want rem", n.Host)
	}
	if n := realmLaunch(t, agent, apiM{"command": []string{"sleep", "600"}, "host": tools.LocalHost, "cwd": t.TempDir()}); n.Host != "" {
		t.Fatalf("host local landed on %q", n.Host)
	}
	apiOK(t, agent, "terminal_snapshot", apiM{"terminal": local.Terminal}, nil)
}

// A launch whose log is inside the state dir — directly, or through a
// symbolic link — is refused with a clear error before anything runs.
func TestLaunchLogsInStateDirRefused(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	out := t.TempDir()
	link := filepath.Join(out, "op.log")
	if err := os.Symlink(tools.SessionPath(dir, tools.OperatorNode), link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{tools.SessionPath(dir, tools.OperatorNode), filepath.Join(dir, "later.log"), link} {
		res := apiFail(t, s.op(), "terminal_launch", apiM{"command": []string{"sleep", "600"}, "cwd": out,
			"logs": []apiM{{"path": p}}}, tools.KindUsage)
		if !strings.Contains(res.Error, "state directory") {
			t.Fatalf("log %s: %s", p, res.Error)
		}
	}
	var list tools.NodeList
	apiOK(t, s.op(), "terminal_list", nil, &list)
	if len(list.Terminals) != 0 {
		t.Fatalf("a refused launch left %d nodes", len(list.Terminals))
	}
}

// A host without termsprawlctl: an agent launched there runs and is
// driven, and is told in its environment that it cannot call; host_list
// shows the host (no ctl) to the operator and, kept to its host, to the
// agent; host_remove is the operator's alone.
func TestRemoteHostWithoutCtl(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 4 s on a loaded 2-core machine")
	t.Parallel()
	s := realmServe(t, false)
	op := s.op()
	r, _ := apiMutate(t, op, "agent_launch", apiM{"agent": "custom", "command": bashArgv(), "host": "rem"})
	var ag tools.NodeInfo
	if err := json.Unmarshal(r.Result, &ag); err != nil || ag.Host != "rem" {
		t.Fatalf("agent_launch on rem: %s %v", r.Result, err)
	}
	sub, _ := apiMutate(t, op, "terminal_submit", apiM{"terminal": ag.Terminal, "text": `echo "[${TERMSPRAWL_CTL_MISSING%%(*}]"`,
		"wait": apiM{"wait": "text", "text": "[termsprawlctl is not installed on host rem ]", "timeout_ms": 20000}})
	if !strings.Contains(string(sub.Result), `"matched":true`) {
		t.Fatalf("the agent was not told: %s", sub.Result)
	}
	var l tools.HostList
	apiOK(t, op, "host_list", nil, &l)
	if len(l.Hosts) != 1 || l.Hosts[0].Name != "rem" || l.Hosts[0].Ctl != "" || l.Hosts[0].State != tools.HostStateConnected || l.Hosts[0].Nodes != 1 {
		t.Fatalf("host_list: %+v", l)
	}
	agent := s.session(ag.Terminal)
	apiOK(t, agent, "host_list", nil, &l)
	if len(l.Hosts) != 1 || l.Hosts[0].Name != "rem" {
		t.Fatalf("host_list for the agent on rem: %+v", l)
	}
	apiFail(t, agent, "host_remove", apiM{"host": "rem", "close_nodes": true}, tools.KindForbidden)
	apiFail(t, op, "host_remove", apiM{"host": "rem"}, tools.KindRejected)
}
