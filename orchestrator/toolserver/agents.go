package toolserver

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/agentstate"
	"github.com/termsprawl/termsprawl/orchestrator/tables"
	"github.com/termsprawl/termsprawl/tools"
)

type agentState struct {
	State        string    `json:"state"`
	Message      string    `json:"message,omitempty"`
	Updated      time.Time `json:"updated"`
	AcceptsTasks bool      `json:"accepts_tasks,omitempty"` // opted in to agent_send from agents that may not drive it
	Incarnation  string    `json:"incarnation"`             // the node life the state belongs to
	// Since is when the state began, TurnStart when the running turn
	// began; Evidence is what the state was derived from, oldest first
	// (agentstate.go).
	Since     time.Time        `json:"since,omitzero"`
	TurnStart time.Time        `json:"turn_start,omitzero"`
	Evidence  []tools.Evidence `json:"evidence,omitempty"`
}

// task is a tools.Task with the incarnations of its two ends, so a reply
// comes only from the node it was sent to, not from a later node that
// reuses its id.
type task struct {
	tools.Task
	FromInc string `json:"from_incarnation"`
	ToInc   string `json:"to_incarnation"`
}

type agentTable struct {
	mu     sync.Mutex            // guards all fields
	states map[string]agentState // node id → reported state
	tasks  map[string]*task
	byMsg  map[string]string // sender incarnation + "\x00" + message_id → task id
	next   int
	disk   *tables.Persister // agents.json (persist.go): states are marked, tasks synced
	// changed are the nodes whose state changed (or went) since the
	// persister last encoded it (setLocked, snapshot).
	changed map[string]bool
	// encoded is each state as last encoded: the persister's, read and
	// written only by snapshot, which its writeMu keeps to one at a time.
	encoded map[string][]byte
	// watching: the running watchers, by watchKey (agentstate.go).
	watching map[string]bool
}

func newAgentTable(st *tables.Store) *agentTable {
	t := &agentTable{states: map[string]agentState{}, tasks: map[string]*task{}, byMsg: map[string]string{}, watching: map[string]bool{},
		changed: map[string]bool{}, encoded: map[string][]byte{}}
	t.disk = tables.NewPersister(st, agentsFile, t.snapshot)
	return t
}

// setLocked stores a node's state; t.mu is held. Every change of states
// goes through it (or deleteLocked), so the persister encodes it again.
func (t *agentTable) setLocked(node string, st agentState) {
	t.states[node] = st
	t.changed[node] = true
}

func (t *agentTable) deleteLocked(node string) {
	delete(t.states, node)
	t.changed[node] = true
}

// agentsOnDisk is agents.json.
type agentsOnDisk struct {
	Next   int                   `json:"next"`
	States map[string]agentState `json:"states"`
	Tasks  []*task               `json:"tasks"`
}

// snapshot is agents.json's content (the persister's), as agentsOnDisk
// encodes it but compact and with each state encoded only when it changed:
// at 200 agents with their evidence a whole encoding takes milliseconds,
// and a write follows the reports of a few agents. Under t.mu it copies
// the changed states, the node ids and the tasks; it encodes outside it.
// A state's Evidence is never written once stored (evidence makes a new
// slice), so the copy shares it.
func (t *agentTable) snapshot() ([]byte, error) {
	t.mu.Lock()
	next := t.next
	ids := make([]string, 0, len(t.states))
	fresh := map[string]agentState{}
	for id, st := range t.states {
		ids = append(ids, id)
		if _, ok := t.encoded[id]; t.changed[id] || !ok {
			fresh[id] = st
		}
	}
	clear(t.changed)
	tasks := make([]task, 0, len(t.tasks))
	for _, tk := range t.tasks {
		tasks = append(tasks, *tk) // agent_reply changes a task in place
	}
	t.mu.Unlock()
	for id, st := range fresh {
		b, err := json.Marshal(st)
		if err != nil {
			t.mu.Lock()
			t.changed[id] = true // encoded again next time
			t.mu.Unlock()
			return nil, fmt.Errorf("persist %s: marshal %s: %w", agentsFile, id, err)
		}
		t.encoded[id] = b
	}
	slices.Sort(ids)
	size := 64
	for _, id := range ids {
		size += len(id) + len(t.encoded[id]) + 4
	}
	out := make([]byte, 0, size)
	out = fmt.Appendf(out, `{"next":%d,"states":{`, next)
	kept := make(map[string]bool, len(ids))
	for i, id := range ids {
		if i > 0 {
			out = append(out, ',')
		}
		key, _ := json.Marshal(id)
		out = append(append(append(out, key...), ':'), t.encoded[id]...)
		kept[id] = true
	}
	maps.DeleteFunc(t.encoded, func(id string, _ []byte) bool { return !kept[id] })
	tb, err := json.Marshal(tasks)
	if err != nil {
		return nil, fmt.Errorf("persist %s: marshal tasks: %w", agentsFile, err)
	}
	out = append(append(append(out, `},"tasks":`...), tb...), '}', '\n')
	return out, nil
}

// restore loads agents.json, keeping what belongs to live incarnations
// (a task needs both of its ends alive).
func (t *agentTable) restore(st *tables.Store, live map[string]bool) error {
	var d agentsOnDisk
	if err := st.Load(agentsFile, &d); err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next = max(t.next, d.Next)
	for id, s := range d.States {
		if live[s.Incarnation] {
			t.setLocked(id, s)
		}
	}
	for _, tk := range d.Tasks {
		if tk == nil || tk.ID == "" || !live[tk.FromInc] || !live[tk.ToInc] {
			continue
		}
		t.tasks[tk.ID] = tk
		t.byMsg[tk.FromInc+"\x00"+tk.MessageID] = tk.ID
	}
	return nil
}

// forget drops a gone node's state and every task it sent or received.
func (t *agentTable) forget(id, incarnation string) {
	t.mu.Lock()
	if st, ok := t.states[id]; ok && (st.Incarnation == incarnation || st.Incarnation == "") {
		t.deleteLocked(id)
	}
	for tid, tk := range t.tasks {
		if tk.FromInc == incarnation || tk.ToInc == incarnation {
			delete(t.tasks, tid)
			delete(t.byMsg, tk.FromInc+"\x00"+tk.MessageID)
		}
	}
	t.mu.Unlock()
	// Marked: a gone incarnation's entries are dropped at load anyway.
	t.disk.Mark()
}

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
	// Telemetry (usage.go): the kind's environment and a token of its own.
	var tenv map[string]string
	var ttok string
	if a.Host == "" { // the receiver is on this machine's loopback
		tenv, ttok = s.agentTelemetry(a.Agent)
	}
	for k, v := range tenv {
		extra[k] = v
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

// describe fills terminal_list's kind and state (CONTRACT §18): shell
// and the process status, or the agent kind and the state agent_status
// reports ("exited" once the program ended).
func (t *agentTable) describe(rows []tools.NodeInfo) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range rows {
		r := &rows[i]
		st, reported := t.states[r.Terminal]
		switch {
		case r.Status == tools.StatusLost: // its state died with it (restore.go)
			r.Kind, r.State = cmp.Or(r.Agent, tools.KindShell), tools.StatusLost
		case r.Agent == "" && !reported:
			r.Kind, r.State = tools.KindShell, r.Status
		case r.Status == tools.StatusExited:
			r.Kind, r.State = cmp.Or(r.Agent, "custom"), tools.AgentExited
		case reported:
			r.Kind, r.State = cmp.Or(r.Agent, "custom"), st.State
		case r.Status == tools.StatusRunning:
			// Launched, no evidence recorded yet (CONTRACT §20: the first
			// state of an agent).
			r.Kind, r.State = r.Agent, tools.AgentStarting
		default:
			r.Kind, r.State = r.Agent, tools.AgentUnknown
		}
	}
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
		t.mu.Lock()
		st, reported := t.states[n.Terminal]
		t.mu.Unlock()
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
		t := s.agents
		t.mu.Lock()
		st := t.states[node]
		if st.Incarnation != inc {
			st = agentState{Incarnation: inc, Updated: time.Now().UTC()}
		}
		st.AcceptsTasks = *a.AcceptsTasks
		t.setLocked(node, st)
		t.mu.Unlock()
		t.disk.Mark() // a reported state
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
		st, _ = s.agents.stateOfLife(node, inc)
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
	t := s.agents
	t.mu.Lock()
	optedIn := target.Agent != "" && t.states[a.Node].AcceptsTasks
	t.mu.Unlock()
	if !canDrive(c.caller, target) && !optedIn {
		if target.Agent == "" {
			return tools.TaskSent{}, nil, tools.Errorf(tools.KindForbidden, "node %q is not an agent: agent_send delivers only to agent nodes (use terminal_submit on terminals you may drive)", a.Node)
		}
		return tools.TaskSent{}, nil, tools.Errorf(tools.KindForbidden, "agent %q does not accept tasks from %q: it must opt in with agent_report {\"accepts_tasks\": true}, or you must be allowed to drive it (the operator and the nodes that launched it)", a.Node, c.caller.Node)
	}
	msgKey := c.caller.Incarnation + "\x00" + a.MessageID
	t.mu.Lock()
	if id, ok := t.byMsg[msgKey]; ok {
		t.mu.Unlock()
		// The first send may still wait for its write: this one too.
		_ = t.disk.Sync(c.ctx) // a failure is logged (persist.go)
		return tools.TaskSent{Task: id, Duplicate: true}, c.stateOf(a.Node), nil
	}
	pending := 0
	for _, other := range t.tasks {
		if other.FromInc == c.caller.Incarnation && other.State == tools.TaskPending {
			pending++
		}
	}
	if pending >= maxTasksPerSender {
		t.mu.Unlock()
		return tools.TaskSent{}, nil, quotaErr("tasks", maxTasksPerSender, "node %q has %d tasks without a reply (the limit is %d): wait for replies (agent_task) before sending more", c.caller.Node, pending, maxTasksPerSender)
	}
	t.next++
	tk := &task{Task: tools.Task{ID: fmt.Sprintf("task-%d", t.next), From: c.caller.Node, To: a.Node, Text: a.Text,
		MessageID: a.MessageID, State: tools.TaskPending, Created: time.Now().UTC()},
		FromInc: c.caller.Incarnation, ToInc: target.Incarnation()}
	t.tasks[tk.ID] = tk
	t.byMsg[msgKey] = tk.ID
	t.mu.Unlock()
	// The task (its id, its message id) is on disk before it is typed
	// and handed out; a failed write is logged and the send goes on, the
	// task kept in memory.
	_ = t.disk.Sync(c.ctx)
	if _, err := s.eng.agents.Submit(c.ctx, a.Node, a.Text, nil); err != nil {
		t.mu.Lock()
		delete(t.tasks, tk.ID)
		delete(t.byMsg, msgKey)
		t.mu.Unlock()
		_ = t.disk.Sync(c.ctx)
		return tools.TaskSent{}, nil, err
	}
	return tools.TaskSent{Task: tk.ID}, c.stateOf(a.Node), nil
}

type taskArg struct {
	Task string `json:"task"`
}

func agentTask(c *call, a taskArg) (tools.Task, error) {
	t := c.s.agents
	t.mu.Lock()
	defer t.mu.Unlock()
	tk, ok := t.tasks[a.Task]
	if !ok {
		return tools.Task{}, tools.Errorf(tools.KindNotFound, "no task %q", a.Task)
	}
	return tk.Task, nil
}

type agentReplyArgs struct {
	Task  string `json:"task"`
	Text  string `json:"text"`
	State string `json:"state"`
}

func agentReply(c *call, a agentReplyArgs) (tools.Task, any, error) {
	t := c.s.agents
	t.mu.Lock()
	tk, ok := t.tasks[a.Task]
	if !ok {
		t.mu.Unlock()
		return tools.Task{}, nil, tools.Errorf(tools.KindNotFound, "no task %q", a.Task)
	}
	if tk.ToInc != c.caller.Incarnation {
		t.mu.Unlock()
		return tools.Task{}, nil, tools.Errorf(tools.KindForbidden, "task %q was sent to %q: only its recipient may reply", a.Task, tk.To)
	}
	if tk.State != tools.TaskPending {
		t.mu.Unlock()
		return tools.Task{}, nil, tools.Errorf(tools.KindConflict, "task %q already has a reply (%s)", a.Task, tk.State)
	}
	tk.State, tk.Reply, tk.Replied = a.State, a.Text, time.Now().UTC()
	out := tk.Task
	t.mu.Unlock()
	_ = t.disk.Sync(c.ctx) // the reply is on disk before it is told; a failure is logged
	return out, out, nil
}
