// Package toolserver serves the operation table over POST /call: it owns
// identity (tokens → node incarnations), authorisation (who may drive
// whom), receipts and idempotency, and one handler per operation in
// per-domain files (identity.go, terminal.go, watches.go, agents.go,
// dialogs.go), dispatched from a map built from those files and checked
// against the table. The engine it drives is package orchestrator.
package toolserver

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/config"
	"github.com/termsprawl/termsprawl/orchestrator/notify"
	"github.com/termsprawl/termsprawl/orchestrator/policy"
	"github.com/termsprawl/termsprawl/orchestrator/tables"
	"github.com/termsprawl/termsprawl/orchestrator/trust"
	"github.com/termsprawl/termsprawl/orchestrator/usage"
	"github.com/termsprawl/termsprawl/tools"
)

// Server implements tools.Backend over one orchestrator.
type Server struct {
	// hooks are the test seams (hooks.go); never nil, empty outside tests.
	hooks    *hooks
	o        *orchestrator.Orchestrator // the wiring only (this file, serve.go)
	eng      engines                    // the domains' views of o (engine.go)
	log      *slog.Logger
	stateDir string
	version  string
	ctlPath  string
	instance string
	receipts *tools.ReceiptStore
	handlers map[string]handler

	// ctx is cancelled at shutdown: it ends waits and watches in flight.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // guards tokens
	tokens map[string]tools.Identity

	store   *tables.Store // the tables on disk (persist.go)
	watches *tables.Watches
	agents  *tables.Agents
	dialogs *tables.Dialogs

	monitor monitorLink // the web monitor's URL (monitor.go)

	// feed is the engine's news (born, gone, status), handled on its own
	// goroutine (feed.go).
	feed *eventFeed

	// slots are the per-token limits /call and /mcp share (requests in
	// flight, /call's rate): tools.CallSlots.
	slots *tools.CallSlots
	// lanes hold the heavy calls (screenshots, traces, searches): an
	// agent's wait in its own lane, the operator's in a reserved one
	// (tools.Lanes, CONTRACT §31).
	lanes *tools.Lanes

	maxNodes  int       // --max-nodes
	nodeQuota nodeQuota // agents' launches under way (quotas.go)

	notifier *notify.Notifier // notifications (notify.go)

	conf  *config.Store // config.toml, read at each use so a reload counts (Serve watches it); never nil
	trust *trust.Store  // the human's approvals of repositories' files
	audit *policy.Audit // <state>/audit.jsonl (policy.go)
	usage *usage.Table  // agents' usage and telemetry tokens (usage.go)
	// usageEndpoint is the OTLP receiver's URL ("" until Serve starts it).
	usageEndpoint string
	budgets       *budgetState // raises, crossings acted on, working time (budget.go)

	wtOnce sync.Once // makes wt (worktree.go)
	wt     *wtTable
	wtDisk *tables.Persister // wt's file, made with the server so that Close ends it (persist.go)

}

// CallSlots are the per-token limits of /call, shared with /mcp
// (tools.NewHandler takes them from here).
func (s *Server) CallSlots() *tools.CallSlots { return s.slots }

// New builds the tool server of o. op is the operator's session.
func New(o *orchestrator.Orchestrator, cfg orchestrator.Config, instance string, op tools.Session) (*Server, error) {
	rs, err := tools.OpenReceiptStore(tools.ReceiptsPath(cfg.StateDir))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	st := tables.NewStore(cfg.StateDir, o.Logger())
	s := &Server{hooks: &hooks{}, o: o, eng: enginesOf(o), log: o.Logger(), stateDir: cfg.StateDir, version: cfg.Version, ctlPath: cfg.CtlPath,
		instance: instance, receipts: rs, ctx: ctx, cancel: cancel,
		tokens: map[string]tools.Identity{op.Token: operatorIdentity},
		store:  st, watches: tables.NewWatches(ctx, st), agents: tables.NewAgents(st),
		slots: tools.NewCallSlots(tools.MaxConnections), lanes: tools.NewLanes(), maxNodes: cmp.Or(max(cfg.MaxNodes, 0), orchestrator.DefaultMaxNodes)}
	s.wtDisk = tables.NewPersister(st, worktreesFile, func() ([]byte, error) { return s.wtTab().snapshot() })
	s.dialogs = tables.NewDialogs(st, tables.DialogHooks{Opened: s.dialogOpened, Ended: s.dialogEnded, Decided: s.dialogDecided})
	s.trust = trust.Open(cfg.StateDir)
	if s.conf = cfg.Settings; s.conf == nil {
		if s.conf, err = config.Open(cfg.StateDir, ConfigChecks()...); err != nil {
			cancel()
			return nil, err
		}
	}
	if s.audit, err = policy.OpenAudit(cfg.StateDir, 0); err != nil {
		cancel()
		return nil, err
	}
	if s.usage, err = usage.Open(cfg.StateDir); err != nil {
		s.log.Warn("usage", "err", err) // a fresh table; the run goes on
	}
	s.budgets = newBudgetState(cfg.StateDir)
	s.usage.OnAdd = s.usageGrew
	if s.notifier, err = s.newNotifier(cfg.Notify, cfg.NotifyMode); err != nil {
		cancel()
		return nil, err
	}
	s.handlers = s.buildHandlers()
	// The engine's news comes through the feed (feed.go): its callbacks
	// only queue, so no token read, receipt or table write runs on the
	// engine's goroutines. A node's token is known from the moment its
	// session file exists, before its program starts: Authenticate waits
	// for the feed before it refuses a token it does not know, so an
	// agent's first call never races its launch.
	s.feed = newEventFeed(s.engineEvent)
	o.OnGone(func(m orchestrator.NodeMeta) { s.feed.post(engineEvent{kind: eventGone, node: m}) })
	o.OnStatus(func() { s.feed.post(engineEvent{kind: eventStatus}) })
	o.OnBorn(func(m orchestrator.NodeMeta) { s.feed.post(engineEvent{kind: eventBorn, node: m}) })
	for _, m := range o.Nodes() {
		s.loadToken(m)
	}
	s.restore()
	s.startAgentWatchers()
	s.settleInterrupted()
	return s, nil
}

// settleInterrupted records the final outcome of the keyed submits and
// closes a killed orchestrator left unfinished, as adoption settled them
// (orchestrator/interrupted.go): a repeat of the key answers it, never
// in_progress for ever.
func (s *Server) settleInterrupted() {
	list := s.o.Interrupted()
	for _, in := range list {
		if in.Intent.Key == "" {
			continue
		}
		var receipt json.RawMessage
		var failure *tools.Error
		var err error
		switch in.Outcome {
		case orchestrator.OutcomeSubmitted:
			receipt, err = tools.Receipt{Action: in.Op, Result: tools.InputResult{Terminal: in.Node}, IdempotencyKey: in.Intent.Key,
				State: (&call{s: s}).stateOf(in.Node)}.Encode()
		case orchestrator.OutcomeCleared:
			failure = tools.Errorf(tools.KindNotRun, "termsprawl stopped after typing this submit's text and before pressing Enter; on restart it cleared the line (End, Ctrl+U) instead of pressing Enter, so nothing was submitted: submit again with a new key").
				WithDetails("interrupted", "cleared")
		case orchestrator.OutcomeMaybe:
			failure = tools.Errorf(tools.KindConflict, "termsprawl stopped while pressing this submit's Enter: it may have been submitted (the line was cleared on restart); it is not run again: look at terminal_snapshot, and use a new key to act again").
				WithDetails("interrupted", "maybe")
		case orchestrator.OutcomeClosed:
			receipt, err = tools.Receipt{Action: in.Op, Result: tools.CloseResult{Terminal: in.Node, Closed: true}, IdempotencyKey: in.Intent.Key,
				State: tools.ClosedState{Terminal: in.Node, Status: "closed"}}.Encode()
		case orchestrator.OutcomeCloseFailed:
			// Not stored, as failures are not: the same key may close again.
			err = s.receipts.DropInterrupted(in.Intent.Caller, in.Intent.Key, in.Op)
		}
		if err == nil && (receipt != nil || failure != nil) {
			err = s.receipts.Settle(in.Intent.Caller, in.Intent.Key, in.Op, receipt, failure)
		}
		if err != nil {
			s.log.Warn("settle an interrupted call's key", "node", in.Node, "op", in.Op, "err", err)
		}
	}
	s.o.AckInterrupted(list)
}

// Close cancels waits and watches in flight, writes what the tables
// marked and ends their persisters (later changes are written by their
// callers), and ends the notifier. It may be called more than once.
func (s *Server) Close() {
	s.cancel()
	s.feed.close() // the news queued so far is handled; later news by its poster
	for _, p := range []*tables.Persister{s.agents.Persister(), s.dialogs.Persister(), s.watches.Persister(), s.wtDisk} {
		p.Close()
	}
	s.notifier.Close()
	_ = s.audit.Close()
}

// Context ends when the server closes (the HTTP server's base context).
func (s *Server) Context() context.Context { return s.ctx }

// nodeGone drops every piece of state tied to one life of a node: its
// token, its receipts, its "always" answers, its watches and tasks. A new
// node that reuses the id inherits nothing.
func (s *Server) nodeGone(m orchestrator.NodeMeta) {
	defer s.kickStream()
	inc := m.Incarnation()
	s.dropToken(inc)
	s.watches.Forget(inc)
	s.dialogs.Forget(inc) // first: ending its dialogs touches its agent state
	s.agents.Forget(m.ID, inc)
	s.usage.Forget(m.ID)
	if err := s.receipts.ForgetCaller(inc); err != nil {
		s.log.Warn("forget receipts of a closed node", "node", m.ID, "err", err)
	}
}

// Handle runs one validated operation.
func (s *Server) Handle(ctx context.Context, caller tools.Identity, op *tools.Operation, args json.RawMessage) tools.Result {
	ctx, cancel := mergeCtx(ctx, s.ctx)
	defer cancel()
	// What the engine told before this call (a node gone, born) is
	// handled before the call looks at the tables.
	_ = s.feed.sync(ctx)
	h, ok := s.handlers[op.Name]
	if !ok {
		return tools.ErrResult(tools.Errorf(tools.KindInternal, "operation %s has no handler", op.Name))
	}
	if tools.IsHeavy(op.Name, args) && !noLanes {
		release, err := s.lanes.Enter(ctx, caller)
		if err != nil {
			return tools.ErrResult(tools.Errorf(tools.KindUnavailable, "%s waited for a heavy-call slot and was cancelled: %w", op.Name, err))
		}
		defer release()
	}
	c := &call{ctx: ctx, caller: caller, op: op, s: s}
	if !op.Mutation {
		v, err := h.read(c, args)
		if err != nil {
			return tools.ErrResult(err)
		}
		return tools.OKResult(v)
	}
	defer s.kickStream() // the event stream's rows go out now (events.go)
	key := tools.IdempotencyKey(args)
	// The engine's intent files carry the key (orchestrator/interrupted.go).
	c.ctx = orchestrator.WithIntent(ctx, caller.Incarnation, key)
	receipt, _, err := s.receipts.Do(ctx, caller.Incarnation, key, op.Name, args, func() (json.RawMessage, error) {
		result, state, err := h.mutate(c, args)
		if err != nil {
			return nil, err
		}
		return tools.Receipt{Action: op.Name, Result: result, IdempotencyKey: key, State: state}.Encode()
	})
	// A node this call closed or launched is dropped from (or known to)
	// the tables before the call answers, as when the engine's callbacks
	// did that work themselves.
	_ = s.feed.sync(ctx)
	if err != nil {
		if receipt != nil {
			// The mutation happened but its receipt could not be stored.
			s.log.Warn("store receipt", "op", op.Name, "err", err)
			return tools.Result{OK: true, Value: receipt}
		}
		return tools.ErrResult(err)
	}
	return tools.Result{OK: true, Value: receipt}
}

// noLanes turns the heavy lanes off (the baseline of
// BenchmarkOperatorUnderLoad).
var noLanes bool

func mergeCtx(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() { stop(); cancel() }
}
