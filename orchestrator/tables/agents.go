package tables

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// AgentsFile is the agent table's file under Dir.
const AgentsFile = "agents.json"

// AgentState is a node's agent state as agents.json keeps it.
type AgentState struct {
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

// Agents is the agent table: reported states, tasks between agents, and
// the running watchers of each node life.
type Agents struct {
	mu     sync.Mutex            // guards all fields
	states map[string]AgentState // node id → reported state
	tasks  map[string]*task
	byMsg  map[string]string // sender incarnation + "\x00" + message_id → task id
	next   int
	disk   *Persister // agents.json: states are marked, tasks synced
	// changed are the nodes whose state changed (or went) since the
	// persister last encoded it (setLocked, snapshot).
	changed map[string]bool
	// encoded is each state as last encoded: the persister's, read and
	// written only by snapshot, which its writeMu keeps to one at a time.
	encoded map[string][]byte
	// watching: the running watchers, by key (ClaimWatch).
	watching map[string]bool
}

// NewAgents is an empty agent table written into st.
func NewAgents(st *Store) *Agents {
	t := &Agents{states: map[string]AgentState{}, tasks: map[string]*task{}, byMsg: map[string]string{}, watching: map[string]bool{},
		changed: map[string]bool{}, encoded: map[string][]byte{}}
	t.disk = NewPersister(st, AgentsFile, t.snapshot)
	return t
}

// setLocked stores a node's state; t.mu is held. Every change of states
// goes through it (or deleteLocked), so the persister encodes it again.
func (t *Agents) setLocked(node string, st AgentState) {
	t.states[node] = st
	t.changed[node] = true
}

func (t *Agents) deleteLocked(node string) {
	delete(t.states, node)
	t.changed[node] = true
}

// agentsOnDisk is agents.json.
type agentsOnDisk struct {
	Next   int                   `json:"next"`
	States map[string]AgentState `json:"states"`
	Tasks  []*task               `json:"tasks"`
}

// snapshot is agents.json's content (the persister's), as agentsOnDisk
// encodes it but compact and with each state encoded only when it changed:
// at 200 agents with their evidence a whole encoding takes milliseconds,
// and a write follows the reports of a few agents. Under t.mu it copies
// the changed states, the node ids and the tasks; it encodes outside it.
// A state's Evidence is never written once stored (evidence makes a new
// slice), so the copy shares it.
func (t *Agents) snapshot() ([]byte, error) {
	t.mu.Lock()
	next := t.next
	ids := make([]string, 0, len(t.states))
	fresh := map[string]AgentState{}
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
			return nil, fmt.Errorf("persist %s: marshal %s: %w", AgentsFile, id, err)
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
		return nil, fmt.Errorf("persist %s: marshal tasks: %w", AgentsFile, err)
	}
	out = append(append(append(out, `},"tasks":`...), tb...), '}', '\n')
	return out, nil
}

// Restore loads agents.json, keeping what belongs to live incarnations
// (a task needs both of its ends alive).
func (t *Agents) Restore(st *Store, live map[string]bool) error {
	var d agentsOnDisk
	if err := st.Load(AgentsFile, &d); err != nil {
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

// Forget drops a gone node's state and every task it sent or received.
func (t *Agents) Forget(id, incarnation string) {
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

// Persister is the table's file writer (Close ends it; tests gate it).
func (t *Agents) Persister() *Persister { return t.disk }

// Update sets node's state to f(its state, whether it has one) and marks
// the file: a reported state is written soon, never waited for (the next
// report, or the process and screen evidence, makes good what a kill -9
// loses). f runs under the table's mutex and must not block.
func (t *Agents) Update(node string, f func(prev AgentState, ok bool) AgentState) AgentState {
	t.mu.Lock()
	prev, ok := t.states[node]
	st := f(prev, ok)
	t.setLocked(node, st)
	t.mu.Unlock()
	t.disk.Mark()
	return st
}

// State is node's state, whatever its life.
func (t *Agents) State(node string) (AgentState, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, ok := t.states[node]
	return st, ok
}

// StateOfLife is the node's state if it belongs to incarnation.
func (t *Agents) StateOfLife(node, incarnation string) (AgentState, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, ok := t.states[node]
	return st, ok && st.Incarnation == incarnation
}

// States is a copy of every node's state.
func (t *Agents) States() map[string]AgentState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.states)
}

// ClaimWatch marks a watcher as running; false if one already runs.
func (t *Agents) ClaimWatch(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.watching[key] {
		return false
	}
	t.watching[key] = true
	return true
}

// ReleaseWatch marks a watcher as ended.
func (t *Agents) ReleaseWatch(key string) {
	t.mu.Lock()
	delete(t.watching, key)
	t.mu.Unlock()
}

// Describe fills terminal_list's kind and state (CONTRACT §18): shell
// and the process status, or the agent kind and the state agent_status
// reports ("exited" once the program ended).
func (t *Agents) Describe(rows []tools.NodeInfo) {
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

// SendTask records a task from caller to the node to (of life toInc),
// unless caller already sent messageID (then dup is set and the first
// task's id returned, once its write is done). A caller has at most limit
// tasks without a reply. The task is on disk before it is returned; a
// failed write is logged and the task kept in memory.
func (t *Agents) SendTask(ctx context.Context, caller tools.Identity, to, toInc, text, messageID string, limit int) (id string, dup bool, err error) {
	msgKey := caller.Incarnation + "\x00" + messageID
	t.mu.Lock()
	if id, ok := t.byMsg[msgKey]; ok {
		t.mu.Unlock()
		// The first send may still wait for its write: this one too.
		_ = t.disk.Sync(ctx) // a failure is logged (Persister)
		return id, true, nil
	}
	pending := 0
	for _, other := range t.tasks {
		if other.FromInc == caller.Incarnation && other.State == tools.TaskPending {
			pending++
		}
	}
	if pending >= limit {
		t.mu.Unlock()
		return "", false, quotaErr("tasks", limit, "node %q has %d tasks without a reply (the limit is %d): wait for replies (agent_task) before sending more", caller.Node, pending, limit)
	}
	t.next++
	tk := &task{Task: tools.Task{ID: fmt.Sprintf("task-%d", t.next), From: caller.Node, To: to, Text: text,
		MessageID: messageID, State: tools.TaskPending, Created: time.Now().UTC()},
		FromInc: caller.Incarnation, ToInc: toInc}
	t.tasks[tk.ID] = tk
	t.byMsg[msgKey] = tk.ID
	t.mu.Unlock()
	_ = t.disk.Sync(ctx)
	return tk.ID, false, nil
}

// DropTask undoes SendTask of a task that could not be delivered.
func (t *Agents) DropTask(ctx context.Context, id string) {
	t.mu.Lock()
	if tk, ok := t.tasks[id]; ok {
		delete(t.tasks, id)
		delete(t.byMsg, tk.FromInc+"\x00"+tk.MessageID)
	}
	t.mu.Unlock()
	_ = t.disk.Sync(ctx)
}

// Task is the task id.
func (t *Agents) Task(id string) (tools.Task, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tk, ok := t.tasks[id]
	if !ok {
		return tools.Task{}, tools.Errorf(tools.KindNotFound, "no task %q", id)
	}
	return tk.Task, nil
}

// Reply records the reply of caller, the task's recipient; it is on disk
// before it is returned (a failure is logged).
func (t *Agents) Reply(ctx context.Context, caller tools.Identity, id, text, state string) (tools.Task, error) {
	t.mu.Lock()
	tk, ok := t.tasks[id]
	if !ok {
		t.mu.Unlock()
		return tools.Task{}, tools.Errorf(tools.KindNotFound, "no task %q", id)
	}
	if tk.ToInc != caller.Incarnation {
		t.mu.Unlock()
		return tools.Task{}, tools.Errorf(tools.KindForbidden, "task %q was sent to %q: only its recipient may reply", id, tk.To)
	}
	if tk.State != tools.TaskPending {
		t.mu.Unlock()
		return tools.Task{}, tools.Errorf(tools.KindConflict, "task %q already has a reply (%s)", id, tk.State)
	}
	tk.State, tk.Reply, tk.Replied = state, text, time.Now().UTC()
	out := tk.Task
	t.mu.Unlock()
	_ = t.disk.Sync(ctx) // the reply is on disk before it is told; a failure is logged
	return out, nil
}
