package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// ---- watches: waits that outlive one request ----

// maxWatches bounds the live watches of one orchestrator.
const maxWatches = 256

// watchLifetime bounds how long a watch waits before it gives up.
const watchLifetime = 24 * time.Hour

type watch struct {
	id, terminal string
	owner        string // the node that started it
	cancel       context.CancelFunc
	done         chan struct{}
	result       WaitResult
	err          error
}

type watchTable struct {
	mu   sync.Mutex // guards next and m
	next int
	m    map[string]*watch
}

func newWatchTable() *watchTable { return &watchTable{m: map[string]*watch{}} }

// firedWatchTTL is how long a fired watch's result waits to be read.
const firedWatchTTL = 10 * time.Minute

// get returns a watch its caller may use: its owner's, or any for the
// operator.
func (w *watchTable) get(caller tools.Identity, id string) (*watch, error) {
	w.mu.Lock()
	wt := w.m[id]
	w.mu.Unlock()
	if wt == nil {
		return nil, tools.Errorf(tools.KindNotFound, "no watch %q (it fired and was read, expired, was cancelled, or never existed)", id)
	}
	if caller.Role != tools.RoleOperator && wt.owner != caller.Node {
		return nil, tools.Errorf(tools.KindForbidden, "watch %q belongs to node %q", id, wt.owner)
	}
	return wt, nil
}

func (w *watchTable) remove(id string) {
	w.mu.Lock()
	delete(w.m, id)
	w.mu.Unlock()
}

func (a *api) watchOp(ctx context.Context, caller tools.Identity, name string, args json.RawMessage) (any, error) {
	w := a.watches
	switch name {
	case "watch_start":
		var p struct {
			Terminal string `json:"terminal"`
			WaitSpec
		}
		if err := decode(args, &p); err != nil {
			return nil, err
		}
		n, err := a.o.lookup(p.Terminal)
		if err != nil {
			return nil, err
		}
		spec := p.WaitSpec
		spec.TimeoutMS = 0
		c, err := compileWait(spec)
		if err != nil {
			return nil, err
		}
		c.timeout = watchLifetime
		if c.After == nil {
			rev := n.scr.Revision()
			c.After = &rev
		}
		w.mu.Lock()
		if len(w.m) >= maxWatches {
			w.mu.Unlock()
			return nil, tools.Errorf(tools.KindRejected, "too many watches (%d): cancel some with watch_cancel", maxWatches)
		}
		w.next++
		id := fmt.Sprintf("watch-%d", w.next)
		wctx, cancel := context.WithCancel(a.ctx)
		wt := &watch{id: id, terminal: p.Terminal, owner: caller.Node, cancel: cancel, done: make(chan struct{})}
		w.m[id] = wt
		w.mu.Unlock()
		go func() {
			defer close(wt.done)
			wt.result, wt.err = n.waitCompiled(wctx, c)
			// A fired watch nobody reads is dropped after a while, so
			// forgotten watches do not fill the table.
			time.AfterFunc(firedWatchTTL, func() { w.remove(id) })
		}()
		return map[string]any{"watch": id, "terminal": p.Terminal, "after": *c.After}, nil
	case "watch_wait":
		var p struct {
			Watch     string `json:"watch"`
			TimeoutMS int    `json:"timeout_ms"`
		}
		if err := decode(args, &p); err != nil {
			return nil, err
		}
		wt, err := w.get(caller, p.Watch)
		if err != nil {
			return nil, err
		}
		timeout := tools.DefaultWaitTimeout
		if p.TimeoutMS > 0 {
			timeout = time.Duration(p.TimeoutMS) * time.Millisecond
		}
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-wt.done:
			w.remove(p.Watch)
			if wt.err != nil {
				return nil, wt.err
			}
			return map[string]any{"watch": p.Watch, "fired": wt.result.Matched, "result": wt.result}, nil
		case <-t.C:
			return nil, tools.Errorf(tools.KindTimeout, "watch %q has not fired yet: call watch_wait again", p.Watch)
		case <-ctx.Done():
			return nil, tools.Errorf(tools.KindTimeout, "watch_wait cancelled: %v", ctx.Err())
		}
	default: // watch_cancel
		var p struct {
			Watch string `json:"watch"`
		}
		if err := decode(args, &p); err != nil {
			return nil, err
		}
		wt, err := w.get(caller, p.Watch)
		if err != nil {
			if tools.KindOf(err) == tools.KindNotFound {
				return map[string]any{"watch": p.Watch, "cancelled": false}, nil
			}
			return nil, err
		}
		w.remove(p.Watch)
		wt.cancel()
		return map[string]any{"watch": p.Watch, "cancelled": true}, nil
	}
}

// ---- agents ----

type agentState struct {
	State   string    `json:"state"`
	Message string    `json:"message,omitempty"`
	Updated time.Time `json:"updated"`
}

type task struct {
	ID        string    `json:"task"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Text      string    `json:"text"`
	MessageID string    `json:"message_id"`
	State     string    `json:"state"` // pending, completed, failed
	Reply     string    `json:"reply,omitempty"`
	Created   time.Time `json:"created"`
	Replied   time.Time `json:"replied,omitzero"`
}

type agentTable struct {
	mu     sync.Mutex // guards all fields
	states map[string]agentState
	tasks  map[string]*task
	byMsg  map[string]string // from + "\x00" + message_id → task id
	next   int
}

func newAgentTable() *agentTable {
	return &agentTable{states: map[string]agentState{}, tasks: map[string]*task{}, byMsg: map[string]string{}}
}

func (t *agentTable) forget(node string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.states, node)
}

// agentCommands are the default commands of known agents.
var agentCommands = map[string][]string{
	"claude": {"claude"}, "codex": {"codex"}, "gemini": {"gemini"}, "opencode": {"opencode"},
}

// mcpConfigPath is the MCP registration file agents are pointed at.
func (o *Orchestrator) mcpConfigPath() string {
	return filepath.Join(o.cfg.StateDir, tools.AgentToolsDir, "mcp.json")
}

func (a *api) agentLaunch(ctx context.Context, caller tools.Identity, args json.RawMessage) (any, any, error) {
	var p struct {
		Agent   string   `json:"agent"`
		Command []string `json:"command"`
		Name    string   `json:"name"`
		Cwd     string   `json:"cwd"`
	}
	if err := decode(args, &p); err != nil {
		return nil, nil, err
	}
	o := a.o
	cmd := p.Command
	if len(cmd) == 0 {
		cmd = agentCommands[p.Agent]
		if len(cmd) == 0 {
			return nil, nil, tools.Errorf(tools.KindUsage, "agent %q needs a command", p.Agent)
		}
	}
	extra := map[string]string{"TERMSPRAWL_AGENT": p.Agent}
	if o.cfg.CtlPath != "" {
		reg := map[string]any{"mcpServers": map[string]any{"termsprawl": map[string]any{"command": o.cfg.CtlPath, "args": []string{"mcp"}}}}
		b, _ := json.MarshalIndent(reg, "", "  ")
		if err := tools.WriteFileAtomic(o.mcpConfigPath(), b); err != nil {
			return nil, nil, err
		}
		extra["TERMSPRAWL_MCP_CONFIG"] = o.mcpConfigPath()
		if len(p.Command) == 0 {
			switch p.Agent {
			case "claude":
				cmd = append(cmd, "--mcp-config", o.mcpConfigPath())
			case "codex":
				cmd = append(cmd, "-c", fmt.Sprintf("mcp_servers.termsprawl.command=%q", o.cfg.CtlPath), "-c", `mcp_servers.termsprawl.args=["mcp"]`)
			}
		}
	}
	name := p.Name
	if name == "" {
		name = p.Agent
	}
	spec := LaunchSpec{Command: cmd, Name: name, Cwd: p.Cwd, EnvMode: "inherit", Agent: p.Agent, ExtraEnv: extra}
	if spec.Cwd == "" {
		spec.Cwd, _ = os.Getwd()
	}
	info, err := a.launchFor(ctx, caller, spec)
	if err != nil {
		return nil, nil, err
	}
	a.agents.mu.Lock()
	a.agents.states[info.Terminal] = agentState{State: "working", Message: "launched", Updated: time.Now().UTC()}
	a.agents.mu.Unlock()
	snap, _ := o.Snapshot(info.Terminal)
	return info, snap, nil
}

func (a *api) agentStatus() any {
	a.agents.mu.Lock()
	defer a.agents.mu.Unlock()
	var out []map[string]any
	for _, n := range a.o.sortedNodes() {
		st, reported := a.agents.states[n.meta.ID]
		if n.meta.Agent == "" && !reported {
			continue
		}
		if !reported {
			st.State = "unknown"
		}
		status, _, _ := n.state()
		out = append(out, map[string]any{"node": n.meta.ID, "name": n.meta.Name, "agent": n.meta.Agent,
			"state": st.State, "message": st.Message, "updated": st.Updated, "status": status})
	}
	if out == nil {
		out = []map[string]any{}
	}
	return map[string]any{"agents": out}
}

func (a *api) agentReport(caller tools.Identity, args json.RawMessage) (any, error) {
	var p struct {
		State   string `json:"state"`
		Message string `json:"message"`
	}
	if err := decode(args, &p); err != nil {
		return nil, err
	}
	if caller.Role == tools.RoleOperator {
		return nil, tools.Errorf(tools.KindUsage, "agent_report is for agent nodes: the operator has no agent state")
	}
	st := agentState{State: p.State, Message: p.Message, Updated: time.Now().UTC()}
	a.agents.mu.Lock()
	a.agents.states[caller.Node] = st
	a.agents.mu.Unlock()
	return map[string]any{"node": caller.Node, "state": st.State, "message": st.Message}, nil
}

func (a *api) agentSend(ctx context.Context, caller tools.Identity, args json.RawMessage) (any, any, error) {
	var p struct {
		Node      string `json:"node"`
		Text      string `json:"text"`
		MessageID string `json:"message_id"`
	}
	if err := decode(args, &p); err != nil {
		return nil, nil, err
	}
	target, err := a.o.lookup(p.Node)
	if err != nil {
		return nil, nil, err
	}
	// agent_send submits into an agent's prompt; any other terminal takes
	// typed input only from those who may drive it.
	if target.meta.Agent == "" && !a.canDrive(caller, p.Node) {
		return nil, nil, tools.Errorf(tools.KindForbidden, "node %q is not an agent: agent_send delivers only to agent nodes (use terminal_submit on terminals you may drive)", p.Node)
	}
	t := a.agents
	t.mu.Lock()
	if id, ok := t.byMsg[caller.Node+"\x00"+p.MessageID]; ok {
		tk := *t.tasks[id]
		t.mu.Unlock()
		return map[string]any{"task": tk.ID, "duplicate": true}, tk, nil
	}
	t.next++
	tk := &task{ID: fmt.Sprintf("task-%d", t.next), From: caller.Node, To: p.Node, Text: p.Text,
		MessageID: p.MessageID, State: "pending", Created: time.Now().UTC()}
	t.tasks[tk.ID] = tk
	t.byMsg[caller.Node+"\x00"+p.MessageID] = tk.ID
	t.mu.Unlock()
	if _, err := a.o.Submit(ctx, p.Node, p.Text, nil); err != nil {
		t.mu.Lock()
		delete(t.tasks, tk.ID)
		delete(t.byMsg, caller.Node+"\x00"+p.MessageID)
		t.mu.Unlock()
		return nil, nil, err
	}
	snap, _ := a.o.Snapshot(p.Node)
	return map[string]any{"task": tk.ID}, snap, nil
}

func (a *api) agentTask(caller tools.Identity, args json.RawMessage) (any, error) {
	var p struct {
		Task string `json:"task"`
	}
	if err := decode(args, &p); err != nil {
		return nil, err
	}
	a.agents.mu.Lock()
	defer a.agents.mu.Unlock()
	tk, ok := a.agents.tasks[p.Task]
	if !ok {
		return nil, tools.Errorf(tools.KindNotFound, "no task %q", p.Task)
	}
	return *tk, nil
}

func (a *api) agentReply(caller tools.Identity, args json.RawMessage) (any, any, error) {
	var p struct {
		Task  string `json:"task"`
		Text  string `json:"text"`
		State string `json:"state"`
	}
	if err := decode(args, &p); err != nil {
		return nil, nil, err
	}
	a.agents.mu.Lock()
	defer a.agents.mu.Unlock()
	tk, ok := a.agents.tasks[p.Task]
	if !ok {
		return nil, nil, tools.Errorf(tools.KindNotFound, "no task %q", p.Task)
	}
	if tk.To != caller.Node {
		return nil, nil, tools.Errorf(tools.KindForbidden, "task %q was sent to %q: only its recipient may reply", p.Task, tk.To)
	}
	if tk.State != "pending" {
		return nil, nil, tools.Errorf(tools.KindConflict, "task %q already has a reply (%s)", p.Task, tk.State)
	}
	tk.State, tk.Reply, tk.Replied = p.State, p.Text, time.Now().UTC()
	return *tk, *tk, nil
}

// ---- dialogs ----

type dialog struct {
	ID       string    `json:"dialog"`
	Node     string    `json:"node"`
	Kind     string    `json:"kind"`
	Title    string    `json:"title"`
	Options  []string  `json:"options,omitempty"`
	Created  time.Time `json:"created"`
	answered chan dialogAnswer
}

type dialogAnswer struct {
	Mode      string `json:"mode"`
	Selection string `json:"selection,omitempty"`
}

type dialogTable struct {
	mu      sync.Mutex // guards all fields
	next    int
	pending map[string]*dialog
	always  map[string]bool // node + kind + title allowed for good
}

func newDialogTable() *dialogTable {
	return &dialogTable{pending: map[string]*dialog{}, always: map[string]bool{}}
}

func (t *dialogTable) list() []dialog {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]dialog, 0, len(t.pending))
	for _, d := range t.pending {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

func (a *api) dialogRequest(ctx context.Context, caller tools.Identity, args json.RawMessage) (any, error) {
	var p struct {
		Kind      string   `json:"kind"`
		Title     string   `json:"title"`
		Options   []string `json:"options"`
		TimeoutMS int      `json:"timeout_ms"`
	}
	if err := decode(args, &p); err != nil {
		return nil, err
	}
	if p.Kind == "question" && len(p.Options) == 0 {
		return nil, tools.Errorf(tools.KindUsage, "a question needs options to choose from")
	}
	t := a.dialogs
	rememberKey := caller.Node + "\x00" + p.Kind + "\x00" + p.Title
	t.mu.Lock()
	if t.always[rememberKey] {
		t.mu.Unlock()
		return map[string]any{"answer": dialogAnswer{Mode: "allow"}, "remembered": true}, nil
	}
	t.next++
	d := &dialog{ID: fmt.Sprintf("dialog-%d", t.next), Node: caller.Node, Kind: p.Kind, Title: p.Title,
		Options: p.Options, Created: time.Now().UTC(), answered: make(chan dialogAnswer, 1)}
	t.pending[d.ID] = d
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.pending, d.ID)
		t.mu.Unlock()
	}()
	timeout := tools.DefaultWaitTimeout
	if p.TimeoutMS > 0 {
		timeout = time.Duration(p.TimeoutMS) * time.Millisecond
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case ans := <-d.answered:
		return map[string]any{"dialog": d.ID, "answer": ans}, nil
	case <-timer.C:
		return nil, tools.Errorf(tools.KindTimeout, "dialog %s was not answered within %v: treat it as denied", d.ID, timeout).WithDetails("dialog", d.ID)
	case <-ctx.Done():
		return nil, tools.Errorf(tools.KindTimeout, "dialog %s abandoned: %v", d.ID, ctx.Err())
	}
}

func (a *api) dialogAnswer(caller tools.Identity, args json.RawMessage) (any, any, error) {
	var p struct {
		Dialog    string `json:"dialog"`
		Mode      string `json:"mode"`
		Selection string `json:"selection"`
	}
	if err := decode(args, &p); err != nil {
		return nil, nil, err
	}
	t := a.dialogs
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.pending[p.Dialog]
	if !ok {
		return nil, nil, tools.Errorf(tools.KindNotFound, "no pending dialog %q: call dialog_list", p.Dialog)
	}
	isDeny := p.Mode == "deny"
	if !isDeny && d.Kind == "permission" && caller.Role != tools.RoleOperator {
		return nil, nil, tools.Errorf(tools.KindNotRun, "agents may only deny: approve permissions in termsprawl, not over MCP (`termsprawl answer %s %s`)", p.Dialog, p.Mode)
	}
	if d.Kind == "question" && !isDeny && p.Selection != "" {
		valid := false
		for _, o := range d.Options {
			valid = valid || o == p.Selection
		}
		if !valid {
			return nil, nil, tools.Errorf(tools.KindUsage, "selection %q is not one of %q", p.Selection, d.Options)
		}
	}
	if p.Mode == "always" {
		t.always[d.Node+"\x00"+d.Kind+"\x00"+d.Title] = true
	}
	ans := dialogAnswer{Mode: p.Mode, Selection: p.Selection}
	d.answered <- ans
	delete(t.pending, p.Dialog)
	return map[string]any{"dialog": d.ID, "answer": ans}, map[string]any{"dialog": d.ID, "node": d.Node, "answered": true}, nil
}
