package toolserver

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/agentstate"
	"github.com/termsprawl/termsprawl/orchestrator/tables"
	"github.com/termsprawl/termsprawl/tools"
)

// agentState is a node's agent state (orchestrator/tables keeps them).
type agentState = tables.AgentState

func agentHandlers() map[string]handler {
	return map[string]handler{
		"agent_launch": mutator(agentLaunch),
		"agent_status": reader(agentStatus),
		"agent_report": reader(agentReport),
		"agent_send":   mutator(agentSend),
		"agent_task":   reader(agentTask),
		"agent_reply":  mutator(agentReply),
	}
}

// agentCommands are the default commands of known agents.
var agentCommands = map[string][]string{
	"claude": {"claude"}, "codex": {"codex"}, "gemini": {"gemini"}, "opencode": {"opencode"},
}

type agentLaunchArgs struct {
	Agent   string   `json:"agent"`
	Command []string `json:"command"`
	Name    string   `json:"name"`
	Cwd     string   `json:"cwd"`
	Host    string   `json:"host"`
	// Worktree: a git worktree to start in (worktree.go).
	Worktree *tools.WorktreeLaunch `json:"worktree"`
	// Sandbox: the profile (sandbox.go); default the agents' default.
	Sandbox string `json:"sandbox"`
	// Env is added to termsprawl's own environment (CONTRACT §26).
	Env map[string]string `json:"env"`
	// Policy names config.toml's [policy.named.NAME] (policy.go).
	Policy string `json:"policy"`
}

func agentLaunch(c *call, a agentLaunchArgs) (tools.NodeInfo, any, error) {
	s := c.s
	cmd := a.Command
	if len(cmd) == 0 {
		cmd = agentCommands[a.Agent]
		if len(cmd) == 0 {
			return tools.NodeInfo{}, nil, tools.Errorf(tools.KindUsage, "agent %q needs a command", a.Agent)
		}
	}
	// Where it runs first: an agent on another host launches there by
	// default (realm.go), and the wiring depends on where.
	host, err := c.realmHost(a.Host)
	if err != nil {
		return tools.NodeInfo{}, nil, err
	}
	a.Host = host
	if a.Policy, err = c.launchPolicy(a.Policy); err != nil {
		return tools.NodeInfo{}, nil, err
	}
	extra := map[string]string{"TERMSPRAWL_AGENT": a.Agent}
	switch {
	case a.Host != "":
		// On a host: its termsprawlctl and an MCP registration written
		// there; the hooks' files are local to this machine, so an agent
		// on a host gets the MCP server only (README's table).
		ctlPath, mcpPath, err := s.eng.agents.HostAgentConfig(c.ctx, a.Host)
		if err != nil {
			return tools.NodeInfo{}, nil, err
		}
		if ctlPath == "" {
			extra["TERMSPRAWL_CTL_MISSING"] = s.eng.agents.HostCtlMissing(a.Host) // told (CONTRACT §23)
		}
		if ctlPath != "" {
			extra["TERMSPRAWL_MCP_CONFIG"] = mcpPath
			if len(a.Command) == 0 || isAgentProgram(a.Agent, a.Command[0]) {
				switch a.Agent {
				case "claude":
					cmd = append(slices.Clone(cmd), "--mcp-config", mcpPath)
				case "codex":
					cmd = append(slices.Clone(cmd), "-c", fmt.Sprintf("mcp_servers.termsprawl.command=%q", ctlPath), "-c", `mcp_servers.termsprawl.args=["mcp"]`)
				}
			}
		}
	default:
		if len(a.Command) == 0 {
			if err := checkAgentProgram(a.Agent, cmd[0]); err != nil {
				return tools.NodeInfo{}, nil, err
			}
		}
		if s.ctlPath == "" {
			break
		}
		args, env, err := s.wireAgent(a.Agent)
		if err != nil {
			return tools.NodeInfo{}, nil, err
		}
		for k, v := range env {
			extra[k] = v
		}
		// The agent's own program, default or named: wired. Another
		// program (a wrapper) is the user's business.
		if len(a.Command) == 0 || isAgentProgram(a.Agent, a.Command[0]) {
			cmd = append(slices.Clone(cmd), args...)
		}
	}
	// Telemetry (usage.go): the kind's environment (and arguments, for
	// its own program) with a token of its own.
	var tenv map[string]string
	var targs []string
	var ttok string
	if a.Host == "" { // the receiver is on this machine's loopback
		targs, tenv, ttok = s.agentTelemetry(a.Agent)
	}
	for k, v := range tenv {
		extra[k] = v
	}
	if len(targs) > 0 && (len(a.Command) == 0 || isAgentProgram(a.Agent, a.Command[0])) {
		cmd = append(slices.Clone(cmd), targs...)
	}
	name := a.Name
	if name == "" {
		name = a.Agent
	}
	spec := orchestrator.LaunchSpec{Command: cmd, Name: name, Cwd: a.Cwd, Env: a.Env, EnvMode: "inherit", Agent: a.Agent, ExtraEnv: extra, Host: explicitHost(a.Host), Worktree: a.Worktree, Policy: a.Policy,
		Sandbox: cmp.Or(a.Sandbox, s.agentSandboxDefault())}
	info, err := c.launchFor(spec)
	if ttok != "" {
		s.usage.Bind(ttok, info.Terminal) // "" on failure drops it
	}
	if err != nil {
		return tools.NodeInfo{}, nil, err
	}
	if m, ok := s.eng.agents.Meta(info.Terminal); ok {
		s.evidence(info.Terminal, m.Incarnation(), tools.Evidence{Source: tools.SourceProcess, Event: agentstate.ProcLaunched}, "launched", "")
		s.watchExit(info.Terminal, m.Incarnation())
		s.watchRules(info.Terminal, m.Incarnation(), a.Agent)
	}
	return info, c.stateOf(info.Terminal), nil
}

type agentStatusArgs struct {
	optionalNodeArg
	Explain bool `json:"explain"`
}

func agentStatus(c *call, a agentStatusArgs) (tools.AgentList, error) {
	t := c.s.agents
	out := []tools.AgentInfo{}
	for _, n := range c.s.eng.agents.List(c.ctx) {
		if a.Node != "" && n.Terminal != a.Node {
			continue
		}
		st, reported := t.State(n.Terminal)
		if n.Agent == "" && !reported {
			continue
		}
		out = append(out, c.s.agentView(c.ctx, n, st, a.Explain))
	}
	if a.Node != "" && len(out) == 0 {
		return tools.AgentList{}, tools.Errorf(tools.KindNotFound, "node %q is not an agent: it has no agent state (see agent_status)", a.Node)
	}
	return tools.AgentList{Agents: out}, nil
}

type agentReportArgs struct {
	State        string `json:"state"`
	Event        string `json:"event"`
	Message      string `json:"message"`
	AcceptsTasks *bool  `json:"accepts_tasks"`
	Conversation string `json:"conversation"`
}

func agentReport(c *call, a agentReportArgs) (tools.AgentReport, error) {
	if c.caller.Role == tools.RoleOperator {
		return tools.AgentReport{}, tools.Errorf(tools.KindUsage, "agent_report is for agent nodes: the operator has no agent state")
	}
	s := c.s
	node, inc := c.caller.Node, c.caller.Incarnation
	if a.Conversation != "" {
		// For a restore after a reboot (restore.go); never fails the report.
		// The table's check (Param.Conversation) refused a bad id already;
		// parsed again here so only a checked id is kept.
		conv, err := tools.ParseConversationID(a.Conversation)
		if err != nil {
			return tools.AgentReport{}, tools.Errorf(tools.KindUsage, "%v", err)
		}
		if err := s.eng.agents.SetConversation(node, conv); err != nil {
			s.log.Warn("keep an agent's conversation id", "node", node, "err", err)
		}
	}
	if a.AcceptsTasks != nil {
		s.agents.Update(node, func(st agentState, _ bool) agentState {
			if st.Incarnation != inc {
				st = agentState{Incarnation: inc, Updated: time.Now().UTC()}
			}
			st.AcceptsTasks = *a.AcceptsTasks
			return st
		})
	}
	ev := hookEvidence(a.Event, a.State)
	if a.Message != "" {
		ev.Detail = oneLine(a.Message, 200)
	}
	var st agentState
	if agentstate.KnownHook(ev.Event) {
		st = s.evidence(node, inc, ev, a.Message, "")
	} else {
		// Logged and ignored: the state stays what it was.
		s.log.Warn("agent hook event termsprawl does not know: ignored", "node", node, "event", ev.Event)
		st, _ = s.agents.StateOfLife(node, inc)
	}
	if a.Event == "AfterAgent" && st.State == tools.AgentIdle {
		s.checkFailedTurn(node, inc) // Gemini CLI ends a failed turn the same way
	}
	if st.State == tools.AgentWaiting && (a.State == tools.AgentWaiting || a.Event == "Notification") {
		s.notifyWaiting(node, a.Message, "")
	}
	return tools.AgentReport{Node: node, State: st.State, Message: st.Message, AcceptsTasks: st.AcceptsTasks}, nil
}

type agentSendArgs struct {
	nodeArg
	Text      string `json:"text"`
	MessageID string `json:"message_id"`
}

func agentSend(c *call, a agentSendArgs) (tools.TaskSent, any, error) {
	s := c.s
	target, ok := s.eng.agents.Meta(a.Node)
	if !ok {
		return tools.TaskSent{}, nil, tools.Errorf(tools.KindNotFound, "no terminal %q: call agent_status to see the agents", a.Node)
	}
	if why, paused := s.budgetPaused(target); paused {
		return tools.TaskSent{}, nil, tools.Errorf(tools.KindNotRun, "agent %q takes no new task: %s", a.Node, why).WithDetails("budget", true)
	}
	// agent_send types into the target's prompt: that is driving it. It is
	// allowed to those who may drive the target, and to anyone when the
	// target is an agent that opted in (agent_report accepts_tasks).
	st, _ := s.agents.State(a.Node)
	optedIn := target.Agent != "" && st.AcceptsTasks
	if !canDrive(c.caller, target) && !optedIn {
		if target.Agent == "" {
			return tools.TaskSent{}, nil, tools.Errorf(tools.KindForbidden, "node %q is not an agent: agent_send delivers only to agent nodes (use terminal_submit on terminals you may drive)", a.Node)
		}
		return tools.TaskSent{}, nil, tools.Errorf(tools.KindForbidden, "agent %q does not accept tasks from %q: it must opt in with agent_report {\"accepts_tasks\": true}, or you must be allowed to drive it (the operator and the nodes that launched it)", a.Node, c.caller.Node)
	}
	// The task (its id, its message id) is on disk before it is typed
	// and handed out.
	id, dup, err := s.agents.SendTask(c.ctx, c.caller, a.Node, target.Incarnation(), a.Text, a.MessageID, maxTasksPerSender)
	if err != nil {
		return tools.TaskSent{}, nil, err
	}
	if dup {
		return tools.TaskSent{Task: id, Duplicate: true}, c.stateOf(a.Node), nil
	}
	if _, err := s.eng.agents.Submit(c.ctx, a.Node, a.Text, nil); err != nil {
		s.agents.DropTask(c.ctx, id)
		return tools.TaskSent{}, nil, err
	}
	return tools.TaskSent{Task: id}, c.stateOf(a.Node), nil
}

type taskArg struct {
	Task string `json:"task"`
}

func agentTask(c *call, a taskArg) (tools.Task, error) {
	return c.s.agents.Task(a.Task)
}

type agentReplyArgs struct {
	Task  string `json:"task"`
	Text  string `json:"text"`
	State string `json:"state"`
}

func agentReply(c *call, a agentReplyArgs) (tools.Task, any, error) {
	out, err := c.s.agents.Reply(c.ctx, c.caller, a.Task, a.Text, a.State)
	if err != nil {
		return tools.Task{}, nil, err
	}
	return out, out, nil
}
