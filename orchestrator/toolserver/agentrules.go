package toolserver

import (
	"errors"
	"fmt"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/agentstate"
	"github.com/termsprawl/termsprawl/orchestrator/config"
	"github.com/termsprawl/termsprawl/tools"
)

// Screen rules (CONTRACT §29): any program can be an agent. The rules
// watcher of an agent whose kind has [[agent_rule]]s in config.toml (a
// custom agent always) waits for its output to be quiet for 500 ms, then
// matches the rules against the screen's last lines, newest rule first;
// the rule that matched is the evidence, named in why. It waits for the
// screen to change before it judges again, and ends with the node's
// life or the server.

// config is config.toml as in force: the server's shared store (up
// opens and watches it; the defaults where none was given).
func (s *Server) config() *config.Config {
	return s.conf.Current()
}

// agentRules are the screen rules of config.toml, named for why.
func (s *Server) agentRules() []agentstate.Rule {
	c := s.config()
	out := make([]agentstate.Rule, 0, len(c.AgentRules))
	for i, r := range c.AgentRules {
		name := fmt.Sprintf("agent_rule[%d]", i)
		if l := c.Line(fmt.Sprintf("agent_rule[%d].pattern", i)); l > 0 {
			name += fmt.Sprintf(" (%s line %d)", config.FileName, l)
		}
		out = append(out, agentstate.Rule{Kind: r.Kind, State: r.State, Name: name, Pattern: r.Regexp()})
	}
	return out
}

// hasRules reports whether kind has screen rules (custom always has
// its watcher: rules may be added while it runs).
func (s *Server) hasRules(kind string) bool {
	if kind == "custom" {
		return true
	}
	for _, r := range s.agentRules() {
		if r.Kind == kind {
			return true
		}
	}
	return false
}

// watchRules starts the rules watcher of an agent node's life (once).
func (s *Server) watchRules(node, incarnation, kind string) {
	if !s.hasRules(kind) {
		return
	}
	key := watchKey("rules", incarnation)
	if !s.agents.ClaimWatch(key) {
		return
	}
	go s.rulesWatcher(node, incarnation, kind, key)
}

// rulesWatcher is the loop: quiet, judge, wait for a change.
func (s *Server) rulesWatcher(node, incarnation, kind, key string) {
	defer s.agents.ReleaseWatch(key)
	for s.ctx.Err() == nil {
		if m, ok := s.eng.agents.Meta(node); !ok || m.Incarnation() != incarnation {
			return
		}
		p, err := s.eng.agents.PrepareWait(node, tools.WaitSpec{Wait: tools.WaitQuiet, QuietMS: int(agentstate.RuleQuiet / time.Millisecond)}, turnWaitSlice)
		if err != nil {
			return
		}
		r, err := p.Run(s.ctx)
		if err != nil {
			var te *tools.Error
			if errors.As(err, &te) && te.Kind == tools.KindTimeout && s.ctx.Err() == nil {
				continue
			}
			return
		}
		if r.Status == tools.StatusExited {
			return // the exit watcher tells
		}
		if !r.Matched {
			continue
		}
		s.judgeRules(node, incarnation, kind)
		// The next judgement is of a changed screen.
		rp, err := s.eng.agents.PrepareWait(node, tools.WaitSpec{Wait: tools.WaitRender}, turnWaitSlice)
		if err != nil {
			return
		}
		for s.ctx.Err() == nil {
			rr, err := rp.Run(s.ctx)
			if err == nil && (rr.Matched || rr.Status == tools.StatusExited) {
				break
			}
			var te *tools.Error
			if err != nil && !(errors.As(err, &te) && te.Kind == tools.KindTimeout) {
				return
			}
			if rp, err = s.eng.agents.PrepareWait(node, tools.WaitSpec{Wait: tools.WaitRender}, turnWaitSlice); err != nil {
				return
			}
		}
	}
}

// judgeRules matches the rules against the quiet screen; a match whose
// state differs from the agent's is applied as evidence.
func (s *Server) judgeRules(node, incarnation, kind string) {
	snap, err := s.eng.agents.Snapshot(s.ctx, node)
	if err != nil {
		return
	}
	rules := s.agentRules()
	i, matched := agentstate.MatchRule(rules, kind, snap.Lines)
	if i < 0 {
		return
	}
	st, ok := s.agents.StateOfLife(node, incarnation)
	if ok && st.State == rules[i].State {
		return
	}
	ev := agentstate.RuleEvidence(rules[i], matched)
	s.evidence(node, incarnation, ev, "screen rule "+rules[i].Name+": "+rules[i].State, "")
	if rules[i].State == tools.AgentWaiting {
		s.notifyWaiting(node, "its screen asks: "+oneLine(matched, 120), "")
	}
}

// checkFailedTurn looks, once the screen is quiet, whether a turn its
// end hook reported as ended had failed (Gemini CLI fires AfterAgent
// after an API error too): the error on the screen after the last
// prompt makes it error.
func (s *Server) checkFailedTurn(node, incarnation string) {
	go func() {
		p, err := s.eng.agents.PrepareWait(node, tools.WaitSpec{Wait: tools.WaitQuiet, QuietMS: int(turnQuiet / time.Millisecond)}, turnWaitSlice)
		if err != nil {
			return
		}
		if r, err := p.Run(s.ctx); err != nil || !r.Matched {
			return
		}
		snap, err := s.eng.agents.Snapshot(s.ctx, node)
		if err != nil {
			return
		}
		line := agentstate.FailedAfterLastPrompt(snap.Lines)
		if line == "" {
			return
		}
		if st, ok := s.agents.StateOfLife(node, incarnation); !ok || st.State != tools.AgentIdle {
			return
		}
		detail := "its end hook came, and the screen shows after the prompt: " + oneLine(line, 200)
		s.evidence(node, incarnation, tools.Evidence{Source: tools.SourceScreen, Event: agentstate.ScreenTurnFailed, Detail: detail}, "the turn failed: "+oneLine(line, 200), "")
	}()
}
