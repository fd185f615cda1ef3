package toolserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/agentstate"
	"github.com/termsprawl/termsprawl/tools"
)

// Agent state you can trust (CONTRACT §20): every fact about an agent —
// its hooks, its dialogs, its process, its screen — is evidence; the
// state is what agentstate.Step makes of the evidence in order. Two
// watchers per agent feed the process and the screen, event-driven on
// the engine's waits (never a poll of tmux):
//
//   - the exit watcher (one per agent node, for its life): an exit wait;
//     the program's end is evidence (exited, or crashed with its report).
//   - the turn watcher (while the agent is working): quiet waits on the
//     mirror; a quiet screen with no busy marker and the prompt back is a
//     turn that ended without its end hook (Esc, C-c, an API error).

// maxEvidence bounds the evidence kept per agent (newest kept).
const maxEvidence = 32

// turnQuiet is how long a young turn's screen must stay still before it
// is judged (the program may not show its busy marker at once); once the
// agent has worked turnQuiet, a stillness of turnQuietLate suffices. A
// turn's end is seen within 10 s: Claude Code 2.1.332 clears a hint 2.7 s
// after an Esc, which with one long stillness pushed it past 10 s on a
// loaded machine.
var (
	turnQuiet     = 2500 * time.Millisecond
	turnQuietLate = 1000 * time.Millisecond
)

// turnWaitSlice bounds one wait of the turn watcher, so it looks again
// whether the agent still works.
var turnWaitSlice = 30 * time.Second

// longTurn is how long a turn must have run for its end to notify.
const longTurn = 30 * time.Second

// transition is one state change, for the notifications.
type transition struct {
	node, incarnation string
	from, to          string
	turnStart         time.Time
	message, dialog   string
	ev                tools.Evidence
	// workedSince is when the state left began (a working span's start).
	workedSince time.Time
}

// evidence applies one fact to a node's agent state. Facts about a node
// life that is over, and hook events termsprawl does not know, change
// nothing. It reports the state after the fact.
func (s *Server) evidence(node, incarnation string, ev tools.Evidence, message, dialog string) agentState {
	if ev.At == "" {
		ev.At = time.Now().UTC().Format(time.RFC3339Nano)
	}
	m, ok := s.eng.agents.Meta(node)
	if !ok || m.Incarnation() != incarnation {
		return agentState{}
	}
	var tr *transition
	st := s.agents.Update(node, func(prev agentState, _ bool) agentState {
		if prev.Incarnation != incarnation {
			prev = agentState{Incarnation: incarnation}
		}
		cur := agentstate.Result{State: prev.State, Since: prev.Since}
		if cur.State == tools.AgentUnknown {
			cur.State = ""
		}
		next, changed := agentstate.Step(cur, ev)
		st := prev
		// A new slice each time: a stored Evidence is never written again, so
		// the persister's copy of the table reads it outside its mutex.
		keep := prev.Evidence[max(0, len(prev.Evidence)+1-maxEvidence):]
		st.Evidence = append(append(make([]tools.Evidence, 0, len(keep)+1), keep...), ev)
		st.Updated = time.Now().UTC()
		if changed {
			st.State, st.Since = next.State, next.Since
			st.Message = message
			if next.State == tools.AgentWorking && prev.State != tools.AgentWorking && prev.State != tools.AgentWaiting {
				st.TurnStart = next.Since
			}
			tr = &transition{node: node, incarnation: incarnation, from: prev.State, to: next.State,
				turnStart: prev.TurnStart, message: st.Message, dialog: dialog, ev: ev, workedSince: prev.Since}
		} else if message != "" && ev.Source == tools.SourceHook {
			st.Message = message
		}
		return st
	})
	// A reported state is written soon, never waited for (Update): the
	// next report, or the process and screen evidence, makes good what a
	// kill -9 loses.
	if tr != nil {
		s.kickStream() // the dashboard's rows at once (events.go)
		s.stateChanged(*tr, m.Agent, m.Name)
	}
	return st
}

// stateChanged starts the turn watcher for a working agent and notifies.
func (s *Server) stateChanged(tr transition, kind, name string) {
	s.log.Debug("agent state", "node", tr.node, "from", tr.from, "to", tr.to, "source", tr.ev.Source, "event", tr.ev.Event)
	if tr.to == tools.AgentWorking || tr.to == tools.AgentStarting {
		s.watchTurn(tr.node, tr.incarnation)
	}
	if (tr.from == tools.AgentWorking || tr.from == tools.AgentWaiting) && (tr.to == tools.AgentIdle || tr.to == tools.AgentError) {
		s.worktreeTurnEnded(tr.node, tr.incarnation) // the turn's diff (worktree.go)
	}
	s.notifyTransition(tr, kind, name)
	if tr.from == tools.AgentWorking && tr.to != tools.AgentWorking {
		go s.addWork(tr.node, tr.workedSince, time.Now()) // budgets' work (budget.go)
	}
}

// hookEvidence is the evidence of agent_report: a hook's event, or a
// state the agent reported itself ("report:STATE").
func hookEvidence(event, state string) tools.Evidence {
	if event == "" {
		event = agentstate.ReportPrefix + state
	}
	return tools.Evidence{Source: tools.SourceHook, Event: event}
}

// watchKey names a watcher of one node life.
func watchKey(kind, incarnation string) string { return kind + "\x00" + incarnation }

// watchExit starts the exit watcher of an agent node's life (once).
func (s *Server) watchExit(node, incarnation string) {
	key := watchKey("exit", incarnation)
	if !s.agents.ClaimWatch(key) {
		return
	}
	go s.exitWatcher(node, incarnation, key)
}

// exitWatcher waits for the program's end: one exit wait for the node's
// life. It ends when the program ends, the node is gone or the server
// closes.
func (s *Server) exitWatcher(node, incarnation, key string) {
	defer s.agents.ReleaseWatch(key)
	p, err := s.eng.agents.PrepareWait(node, tools.WaitSpec{Wait: tools.WaitExit}, 100*365*24*time.Hour)
	if err != nil {
		return
	}
	r, err := p.Run(s.ctx)
	if err != nil || !r.Matched {
		return
	}
	s.processEnded(node, incarnation)
}

// processEnded records the program's end: crashed (with its crash
// report) or exited.
func (s *Server) processEnded(node, incarnation string) {
	info, err := s.eng.agents.Info(s.ctx, node)
	if err != nil || info.Status != tools.StatusExited {
		return
	}
	ev := tools.Evidence{Source: tools.SourceProcess, Event: agentstate.ProcExited}
	msg := "the program exited"
	if info.ExitCode != nil {
		msg = fmt.Sprintf("the program exited with code %d", *info.ExitCode)
	}
	if info.Crash != nil {
		ev.Event = agentstate.ProcCrashed
		switch {
		case info.Crash.Signal != "":
			msg = "the program was killed by " + info.Crash.Signal
		case info.Crash.ExitCode != nil:
			msg = fmt.Sprintf("the program crashed with code %d", *info.Crash.ExitCode)
		}
	}
	if info.ExitReason != "" {
		msg += " (" + info.ExitReason + ")"
	}
	ev.Detail = msg
	s.evidence(node, incarnation, ev, msg, "")
}

// watchTurn starts the turn watcher of a working agent (once at a time).
func (s *Server) watchTurn(node, incarnation string) {
	key := watchKey("turn", incarnation)
	if !s.agents.ClaimWatch(key) {
		return
	}
	go s.turnWatcher(node, incarnation, key)
}

// turnWatcher judges the screen each time it goes quiet while the agent
// starts (its prompt up: ready) or works (the prompt back: the turn ended). It ends when the agent stops working, its node is gone, or the
// server closes; each wait is bounded by turnWaitSlice so a changed state
// is seen.
func (s *Server) turnWatcher(node, incarnation, key string) {
	defer s.agents.ReleaseWatch(key)
	for s.ctx.Err() == nil {
		st, ok := s.agents.StateOfLife(node, incarnation)
		if !ok || (st.State != tools.AgentWorking && st.State != tools.AgentStarting) {
			return
		}
		p, err := s.eng.agents.PrepareWait(node, tools.WaitSpec{Wait: tools.WaitQuiet, QuietMS: int(turnQuietLate / time.Millisecond)}, turnWaitSlice)
		if err != nil {
			return
		}
		r, err := p.Run(s.ctx)
		s.log.Debug("turn watcher: quiet wait", "node", node, "matched", r.Matched, "timed_out", r.TimedOut, "err", err)
		if err == nil && r.Matched && r.Status != tools.StatusExited && !s.youngTurnStill(node, incarnation) {
			continue // the screen changed before the turn was turnQuiet old
		}
		if err != nil {
			var te *tools.Error
			if errors.As(err, &te) && te.Kind == tools.KindTimeout && s.ctx.Err() == nil {
				continue
			}
			return
		}
		if !r.Matched || r.Status == tools.StatusExited {
			if r.Status == tools.StatusExited {
				return // the exit watcher tells
			}
			continue
		}
		if !s.judgeScreen(node, incarnation) {
			// Still busy: wait for the screen to change before the next
			// quiet wait, so a still screen is judged once.
			if rp, err := s.eng.agents.PrepareWait(node, tools.WaitSpec{Wait: tools.WaitRender}, turnWaitSlice); err == nil {
				_, _ = rp.Run(s.ctx)
			}
		}
	}
}

// youngTurnStill is called on a screen still for turnQuietLate: for a
// state younger than turnQuiet it waits, while the screen stays still,
// until the state is turnQuiet old, and reports whether it stayed still
// (false: it changed, or the wait failed).
func (s *Server) youngTurnStill(node, incarnation string) bool {
	st, ok := s.agents.StateOfLife(node, incarnation)
	if !ok || st.Since.IsZero() {
		return true
	}
	rest := turnQuiet - time.Since(st.Since)
	if rest <= 0 {
		return true
	}
	p, err := s.eng.agents.PrepareWait(node, tools.WaitSpec{Wait: tools.WaitRender}, rest)
	if err != nil {
		return false
	}
	r, err := p.Run(s.ctx)
	return err == nil && r.TimedOut && !r.Matched
}

// judgeScreen looks at a quiet screen of a working agent; true when it
// showed the turn's end (and the evidence was applied).
func (s *Server) judgeScreen(node, incarnation string) bool {
	snap, err := s.eng.agents.Snapshot(s.ctx, node)
	if err != nil {
		return false
	}
	ended, event, detail := agentstate.TurnEnded(snap.Lines)
	s.log.Debug("turn watcher: judged", "node", node, "ended", ended, "event", event)
	if !ended {
		return false
	}
	// The state may have moved meanwhile (the Stop hook came first).
	st, ok := s.agents.StateOfLife(node, incarnation)
	if !ok || (st.State != tools.AgentWorking && st.State != tools.AgentStarting) {
		return true
	}
	if st.State == tools.AgentStarting {
		// A resumed conversation may show its last turn's error: the
		// prompt is up all the same.
		s.evidence(node, incarnation, tools.Evidence{Source: tools.SourceScreen, Event: agentstate.ScreenReady, Detail: "quiet, its prompt up"}, "ready", "")
		return true
	}
	msg := "the turn ended without its end hook (" + detail + ")"
	if event == agentstate.ScreenAPIError {
		msg = "the turn failed: " + detail
	}
	s.evidence(node, incarnation, tools.Evidence{Source: tools.SourceScreen, Event: event, Detail: detail}, msg, "")
	return true
}

// startAgentWatchers starts the watchers of the agents already running
// (after a restart of termsprawl): the exit watcher of each, the turn
// watcher of those working; an agent whose program ended meanwhile is
// told so.
func (s *Server) startAgentWatchers() {
	for _, m := range s.eng.agents.Nodes() {
		if m.Agent == "" {
			continue
		}
		inc := m.Incarnation()
		s.watchExit(m.ID, inc)
		s.watchRules(m.ID, inc, m.Agent)
		if st, ok := s.agents.StateOfLife(m.ID, inc); ok && st.State == tools.AgentWorking {
			s.watchTurn(m.ID, inc)
		}
	}
}

// agentView is an agent_status row's state part, from the table's state
// and the node's status: a program that ended is exited whatever the
// evidence said (the exit watcher may not have told yet).
func (s *Server) agentView(ctx context.Context, info tools.NodeInfo, st agentState, explain bool) tools.AgentInfo {
	if info.Status == tools.StatusExited && st.State != tools.AgentExited {
		if m, ok := s.eng.agents.Meta(info.Terminal); ok {
			s.processEnded(info.Terminal, m.Incarnation())
			if again, ok := s.agents.StateOfLife(info.Terminal, m.Incarnation()); ok {
				st = again
			}
		}
	}
	state := st.State
	switch {
	case state == "" && info.Status == tools.StatusRunning && info.Agent != "":
		state = tools.AgentStarting // launched, no evidence recorded yet
	case state == "":
		state = tools.AgentUnknown
	}
	out := tools.AgentInfo{Node: info.Terminal, Name: info.Name, Agent: info.Agent, State: state, Message: st.Message,
		Updated: st.Updated, Status: info.Status, AcceptsTasks: st.AcceptsTasks, NeedsHuman: state == tools.AgentWaiting}
	if !st.Since.IsZero() {
		out.Since = st.Since.UTC().Format(time.RFC3339)
	}
	out.Usage = s.usageOf(info.Terminal)
	out.Budget = s.budgetNote(info.Terminal)
	if explain {
		out.Why = make([]tools.Evidence, 0, len(st.Evidence))
		for i := len(st.Evidence) - 1; i >= 0; i-- {
			out.Why = append(out.Why, st.Evidence[i])
		}
	}
	return out
}

// annotateNodes puts the agents' states on terminal_list rows.
func (s *Server) annotateNodes(ctx context.Context, nodes []tools.NodeInfo) {
	t := s.agents
	for i, n := range nodes {
		if n.Agent == "" {
			continue
		}
		nodes[i].Usage = s.usageOf(n.Terminal)
		st, ok := t.State(n.Terminal)
		if !ok {
			continue
		}
		v := s.agentView(ctx, n, st, false)
		nodes[i].State, nodes[i].Since, nodes[i].NeedsHuman = v.State, v.Since, v.NeedsHuman
	}
}
