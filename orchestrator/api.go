package orchestrator

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"sync"

	"github.com/termsprawl/termsprawl/tools"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// api implements tools.Backend: identity from tokens, permission checks,
// receipts and idempotency for mutations, and the operation handlers.
type api struct {
	o        *Orchestrator
	instance string
	receipts *tools.ReceiptStore
	ctx      context.Context // cancelled at shutdown: ends waits in flight
	cancel   context.CancelFunc

	mu     sync.Mutex // guards tokens
	tokens map[string]tools.Identity

	watches *watchTable
	agents  *agentTable
	dialogs *dialogTable
}

func newAPI(o *Orchestrator, instance string, op tools.Session) (*api, error) {
	rs, err := tools.OpenReceiptStore(tools.ReceiptsPath(o.cfg.StateDir))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &api{o: o, instance: instance, receipts: rs, ctx: ctx, cancel: cancel,
		tokens:  map[string]tools.Identity{op.Token: {Node: tools.OperatorNode, Role: tools.RoleOperator}},
		watches: newWatchTable(), agents: newAgentTable(), dialogs: newDialogTable()}
	for _, n := range o.sortedNodes() {
		a.loadToken(n.meta.ID)
	}
	return a, nil
}

func (a *api) close() { a.cancel() }

// loadToken reads a node's session file into the token table.
func (a *api) loadToken(id string) {
	s, err := tools.ReadSession(tools.SessionPath(a.o.cfg.StateDir, id))
	if err != nil {
		a.o.log.Warn("node session file unreadable", "node", id, "err", err)
		return
	}
	a.mu.Lock()
	a.tokens[s.Token] = tools.Identity{Node: s.Node, Role: s.Role}
	a.mu.Unlock()
}

func (a *api) dropToken(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for tok, ident := range a.tokens {
		if ident.Node == id && ident.Role != tools.RoleOperator {
			delete(a.tokens, tok)
		}
	}
}

// Authenticate compares the token with every known one in constant time.
func (a *api) Authenticate(token string) (tools.Identity, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var found tools.Identity
	ok := false
	for tok, ident := range a.tokens {
		if tools.TokenEqual(tok, token) {
			found, ok = ident, true
		}
	}
	if ok && found.Role != tools.RoleOperator && a.o.node(found.Node) == nil {
		return tools.Identity{}, false // the node is gone: its token died with it
	}
	return found, ok
}

// canDrive reports whether caller may drive (send input to, resize,
// signal, close) node id: the operator always; an agent its own node and
// the nodes it launched, and their descendants.
func (a *api) canDrive(caller tools.Identity, id string) bool {
	if caller.Role == tools.RoleOperator || caller.Node == id {
		return true
	}
	seen := map[string]bool{}
	for cur := id; cur != "" && !seen[cur]; {
		seen[cur] = true
		owner, ok := a.o.Owner(cur)
		if !ok {
			return false
		}
		if owner == caller.Node {
			return true
		}
		cur = owner
	}
	return false
}

func (a *api) mustDrive(caller tools.Identity, id string) error {
	if _, err := a.o.lookup(id); err != nil {
		return err
	}
	if !a.canDrive(caller, id) {
		return tools.Errorf(tools.KindForbidden, "node %q may not drive terminal %q: agents drive only themselves and the terminals they launched (reading is allowed)", caller.Node, id)
	}
	return nil
}

// Handle runs one validated operation.
func (a *api) Handle(ctx context.Context, caller tools.Identity, op *tools.Operation, args json.RawMessage) tools.Result {
	ctx, cancel := mergeCtx(ctx, a.ctx)
	defer cancel()
	if !op.Mutation {
		v, err := a.read(ctx, caller, op, args)
		if err != nil {
			return tools.ErrResult(err)
		}
		return tools.OKResult(v)
	}
	var key struct {
		Key string `json:"idempotency_key"`
	}
	_ = json.Unmarshal(args, &key)
	receipt, _, err := a.receipts.Do(ctx, caller.Node, key.Key, op.Name, args, func() (json.RawMessage, error) {
		result, state, err := a.mutate(ctx, caller, op, args)
		if err != nil {
			return nil, err
		}
		return tools.Receipt{Action: op.Name, Result: result, IdempotencyKey: key.Key, State: state}.Encode()
	})
	if err != nil {
		if receipt != nil {
			// The mutation happened but its receipt could not be stored.
			a.o.log.Warn("store receipt", "op", op.Name, "err", err)
			return tools.Result{OK: true, Value: receipt}
		}
		return tools.ErrResult(err)
	}
	return tools.Result{OK: true, Value: receipt}
}

func mergeCtx(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() { stop(); cancel() }
}

// decode unmarshals validated args into v.
func decode(args json.RawMessage, v any) error {
	if err := tools.DecodeArgs(args, v); err != nil {
		return tools.Errorf(tools.KindUsage, "%v", err)
	}
	return nil
}

type terminalArg struct {
	Terminal string `json:"terminal"`
}

func (a *api) sessionInfo(caller tools.Identity) map[string]any {
	info := map[string]any{
		"node": caller.Node, "role": caller.Role, "instance_id": a.instance, "version": a.o.cfg.Version,
		"tmux_socket": a.o.cfg.Socket, "operations": tools.OperationNames(),
		"preferences_file": tools.PreferencesPath(a.o.cfg.StateDir), "state_dir": a.o.cfg.StateDir,
		"attach": "tmux -L " + a.o.cfg.Socket + " attach-session -t ts-<node>",
	}
	if caller.Role != tools.RoleOperator {
		info["tmux_session"] = "ts-" + caller.Node
	}
	var reseeds, heals int
	for _, n := range a.o.sortedNodes() {
		n.mu.Lock()
		reseeds += n.reseeds
		heals += n.healed
		n.mu.Unlock()
	}
	// How often mirrors were rebuilt from tmux, and how often a quiet
	// mirror differed from tmux and was healed: regressions show here.
	info["mirror_reseeds"] = reseeds
	info["mirror_heals"] = heals
	return info
}

// read handles the operations that change nothing.
func (a *api) read(ctx context.Context, caller tools.Identity, op *tools.Operation, args json.RawMessage) (any, error) {
	o := a.o
	switch op.Name {
	case "session_info":
		return a.sessionInfo(caller), nil
	case "guide_read":
		var p struct {
			Topic string `json:"topic"`
		}
		if err := decode(args, &p); err != nil {
			return nil, err
		}
		text, ok := tools.Guide(p.Topic)
		if !ok {
			return nil, tools.Errorf(tools.KindNotFound, "no guide %q: topics are %v", p.Topic, tools.GuideTopics())
		}
		return map[string]any{"topic": p.Topic, "text": text}, nil
	case "terminal_list":
		return map[string]any{"terminals": o.List(ctx)}, nil
	case "terminal_snapshot":
		var p struct {
			Terminal        string `json:"terminal"`
			ScrollbackLines int    `json:"scrollback_lines"`
			Screenshot      bool   `json:"screenshot"`
		}
		if err := decode(args, &p); err != nil {
			return nil, err
		}
		snap, err := o.Snapshot(p.Terminal)
		if err != nil {
			return nil, err
		}
		out := struct {
			Snapshot
			Scrollback *[]string `json:"scrollback,omitempty"` // only when asked for
			Image      string    `json:"image,omitempty"`      // base64 PNG
		}{Snapshot: snap}
		if p.ScrollbackLines > 0 {
			from, to := -p.ScrollbackLines, -1
			sb, err := o.Scrollback(ctx, p.Terminal, &from, &to, "")
			if err != nil {
				return nil, err
			}
			lines := make([]string, 0, len(sb.Lines))
			for _, l := range sb.Lines {
				lines = append(lines, l.Text)
			}
			out.Scrollback = &lines
		}
		if p.Screenshot {
			img, err := renderPNG(snap.Snapshot)
			if err != nil {
				return nil, tools.Errorf(tools.KindNotRun, "%v", err)
			}
			out.Image = base64.StdEncoding.EncodeToString(img)
		}
		return out, nil
	case "terminal_read":
		var p struct {
			Terminal string `json:"terminal"`
			MaxChars int    `json:"max_chars"`
		}
		if err := decode(args, &p); err != nil {
			return nil, err
		}
		return o.Read(ctx, p.Terminal, p.MaxChars)
	case "terminal_capture_since":
		var p struct {
			Terminal string `json:"terminal"`
			Cursor   uint64 `json:"cursor"`
		}
		if err := decode(args, &p); err != nil {
			return nil, err
		}
		return o.CaptureSince(p.Terminal, p.Cursor)
	case "terminal_wait_for":
		var p struct {
			Terminal string `json:"terminal"`
			WaitSpec
		}
		if err := decode(args, &p); err != nil {
			return nil, err
		}
		return o.WaitFor(ctx, p.Terminal, p.WaitSpec)
	case "terminal_scrollback":
		var p struct {
			Terminal string `json:"terminal"`
			From     *int   `json:"from"`
			To       *int   `json:"to"`
			Search   string `json:"search"`
		}
		if err := decode(args, &p); err != nil {
			return nil, err
		}
		return o.Scrollback(ctx, p.Terminal, p.From, p.To, p.Search)
	case "watch_start", "watch_wait", "watch_cancel":
		return a.watchOp(ctx, caller, op.Name, args)
	case "agent_status":
		return a.agentStatus(), nil
	case "agent_report":
		return a.agentReport(caller, args)
	case "agent_task":
		return a.agentTask(caller, args)
	case "dialog_request":
		return a.dialogRequest(ctx, caller, args)
	case "dialog_list":
		return map[string]any{"dialogs": a.dialogs.list()}, nil
	}
	return nil, tools.Errorf(tools.KindInternal, "operation %s has no handler", op.Name)
}

// launchFor launches a node owned by caller (and, for an agent, with
// caller as its parent) and registers the new node's token.
func (a *api) launchFor(ctx context.Context, caller tools.Identity, spec LaunchSpec) (NodeInfo, error) {
	spec.Owner = caller.Node
	if caller.Role != tools.RoleOperator {
		spec.Parent = caller.Node
	}
	info, err := a.o.Launch(ctx, spec)
	if err != nil {
		return NodeInfo{}, err
	}
	a.loadToken(info.Terminal)
	return info, nil
}

// mutate handles mutations and returns the receipt's result and state.
func (a *api) mutate(ctx context.Context, caller tools.Identity, op *tools.Operation, args json.RawMessage) (result any, state any, err error) {
	o := a.o
	var t terminalArg
	_ = json.Unmarshal(args, &t)
	if t.Terminal != "" {
		if err := a.mustDrive(caller, t.Terminal); err != nil {
			return nil, nil, err
		}
	}
	stateOf := func(id string) any {
		s, err := o.Snapshot(id)
		if err != nil {
			return map[string]any{"terminal": id, "status": "closed"}
		}
		return s
	}
	var in struct {
		Terminal string    `json:"terminal"`
		Text     string    `json:"text"`
		Keys     string    `json:"keys"`
		Wait     *WaitSpec `json:"wait"`
	}
	switch op.Name {
	case "terminal_launch":
		var spec LaunchSpec
		if err := decode(args, &spec); err != nil {
			return nil, nil, err
		}
		info, err := a.launchFor(ctx, caller, spec)
		if err != nil {
			return nil, nil, err
		}
		return info, stateOf(info.Terminal), nil
	case "agent_launch":
		return a.agentLaunch(ctx, caller, args)
	case "terminal_type", "terminal_press", "terminal_paste", "terminal_submit", "terminal_interrupt":
		if err := decode(args, &in); err != nil {
			return nil, nil, err
		}
		var r InputResult
		switch op.Name {
		case "terminal_type":
			r, err = o.Type(ctx, in.Terminal, in.Text, in.Wait)
		case "terminal_press":
			r, err = o.Press(ctx, in.Terminal, in.Keys, in.Wait)
		case "terminal_paste":
			r, err = o.Paste(ctx, in.Terminal, in.Text, in.Wait)
		case "terminal_submit":
			r, err = o.Submit(ctx, in.Terminal, in.Text, in.Wait)
		case "terminal_interrupt":
			r, err = o.Interrupt(ctx, in.Terminal, in.Wait)
		}
		if err != nil {
			return nil, nil, err
		}
		return r, stateOf(in.Terminal), nil
	case "terminal_resize":
		var p struct {
			Terminal      string `json:"terminal"`
			Columns, Rows int
		}
		if err := decode(args, &p); err != nil {
			return nil, nil, err
		}
		snap, err := o.Resize(ctx, p.Terminal, p.Columns, p.Rows)
		if err != nil {
			return nil, nil, err
		}
		return map[string]any{"terminal": p.Terminal, "columns": snap.Columns, "rows": snap.Rows, "revision": snap.Revision}, snap, nil
	case "terminal_signal":
		var p struct {
			Terminal string `json:"terminal"`
			Signal   string `json:"signal"`
		}
		if err := decode(args, &p); err != nil {
			return nil, nil, err
		}
		r, err := o.Signal(p.Terminal, p.Signal)
		if err != nil {
			return nil, nil, err
		}
		return r, stateOf(p.Terminal), nil
	case "terminal_close":
		if err := o.CloseNode(ctx, t.Terminal); err != nil {
			return nil, nil, err
		}
		a.dropToken(t.Terminal)
		a.agents.forget(t.Terminal)
		return map[string]any{"terminal": t.Terminal, "closed": true}, stateOf(t.Terminal), nil
	case "terminal_external":
		r, err := o.External(t.Terminal)
		if err != nil {
			return nil, nil, err
		}
		return r, stateOf(t.Terminal), nil
	case "terminal_focus":
		r, err := o.Focus(ctx, t.Terminal)
		if err != nil {
			return nil, nil, err
		}
		return r, stateOf(t.Terminal), nil
	case "agent_send":
		return a.agentSend(ctx, caller, args)
	case "agent_reply":
		return a.agentReply(caller, args)
	case "dialog_answer":
		return a.dialogAnswer(caller, args)
	}
	return nil, nil, tools.Errorf(tools.KindInternal, "operation %s has no handler", op.Name)
}
