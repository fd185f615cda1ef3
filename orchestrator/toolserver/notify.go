package toolserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/agentstate"
	"github.com/termsprawl/termsprawl/orchestrator/notify"
	"github.com/termsprawl/termsprawl/tools"
)

// Notifications (CONTRACT §20): the configured targets, and the
// transitions of agent state that notify. The tmux target shows a line
// on the humans' tmux clients for every event but needs_human, which
// §16's waiting message (waiting.go) already shows whatever the targets;
// the terminal target writes OSC 9 and OSC 777 to the humans' terminals.

// NotifyOptions tune the notifier (tests shorten the backoff).
var NotifyOptions notify.Options

// newNotifier builds the notifier from notify.json and up's flags; a bad
// file, target or mode is an error that names it (up refuses to start).
func (s *Server) newNotifier(flags []string, mode string) (*notify.Notifier, error) {
	cfg, err := notify.Load(s.stateDir, flags, mode)
	if err != nil {
		return nil, err
	}
	targets := make([]notify.Target, 0, len(cfg.Targets))
	for _, spec := range cfg.Targets {
		switch spec.Kind {
		case notify.KindTmux:
			targets = append(targets, notify.FuncTarget{Label: notify.KindTmux, F: s.notifyTmux})
		case notify.KindTerminal:
			targets = append(targets, notify.FuncTarget{Label: notify.KindTerminal, F: s.notifyTerminal})
		case notify.KindDesktop:
			targets = append(targets, notify.Desktop{})
		case notify.KindWebhook:
			targets = append(targets, notify.Webhook{URL: spec.URL})
		}
	}
	return notify.New(cfg.Mode, targets, s.log, NotifyOptions), nil
}

func (s *Server) notifyTmux(ctx context.Context, e notify.Event) (string, error) {
	if e.Event == notify.EventNeedsHuman {
		return "shown by the waiting message", nil
	}
	msg := "termsprawl: " + e.Title
	if e.Text != "" {
		msg += ": " + e.Text
	}
	n, err := s.eng.notify.NotifyHumans(ctx, msg)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("shown on %d tmux clients", n), nil
}

func (s *Server) notifyTerminal(ctx context.Context, e notify.Event) (string, error) {
	n, err := s.eng.notify.NotifyTerminals(ctx, notify.OSC(e.Title, e.Text))
	if err != nil && n == 0 {
		return "", err
	}
	if n == 0 {
		return "no human attached", errors.New("no human client is attached to termsprawl's tmux servers")
	}
	return fmt.Sprintf("OSC 9 and 777 written to %d terminals", n), nil
}

// notifyTransition turns a state change into a notification (the mode
// and the 30 s window decide whether it goes out).
func (s *Server) notifyTransition(tr transition, kind, name string) {
	if s.notifier == nil {
		return
	}
	e := notify.Event{Node: tr.node, Name: name, Kind: kind, State: tr.to, Text: tr.message,
		At: time.Now().UTC().Format(time.RFC3339)}
	label := tr.node
	if name != "" && name != tr.node {
		label = fmt.Sprintf("%s (%s)", tr.node, name)
	}
	switch {
	case tr.to == tools.AgentWaiting:
		e.Event, e.Title = notify.EventNeedsHuman, label+" needs you"
		e.Answer = "termsprawl attach " + tr.node
		if tr.dialog != "" {
			e.Answer = fmt.Sprintf("termsprawl answer %s allow|deny", tr.dialog)
		}
	case tr.to == tools.AgentError:
		e.Event, e.Title = notify.EventError, label+"'s turn failed"
	case tr.to == tools.AgentExited && tr.ev.Event == agentstate.ProcCrashed:
		e.Event, e.Title = notify.EventCrash, label+" crashed"
	case tr.to == tools.AgentExited:
		e.Event, e.Title = notify.EventExited, label+" exited"
	case tr.from == tools.AgentWorking && tr.to == tools.AgentIdle && !tr.turnStart.IsZero() && time.Since(tr.turnStart) >= longTurn:
		e.Event, e.Title = notify.EventTurnDone, fmt.Sprintf("%s finished a turn of %s", label, time.Since(tr.turnStart).Round(time.Second))
	default:
		return
	}
	s.notifier.Notify(e)
}

func notifyHandlers() map[string]handler {
	return map[string]handler{"notify_test": reader(notifyTest)}
}

// notifyTest sends one notification to each target and says what each
// answered (operator only: it reaches the humans).
func notifyTest(c *call, _ noArgs) (tools.NotifyTestResult, error) {
	if c.caller.Role != tools.RoleOperator {
		return tools.NotifyTestResult{}, tools.Errorf(tools.KindForbidden, "notify_test is for the operator (termsprawl notify test): it notifies the humans")
	}
	n := c.s.notifier
	e := notify.Event{Node: tools.OperatorNode, Name: "termsprawl", Kind: "test", Event: notify.EventTest, State: "test",
		Title: "termsprawl notification test", Text: "If you can read this, termsprawl can reach you here.", At: time.Now().UTC().Format(time.RFC3339)}
	return tools.NotifyTestResult{Mode: n.Mode(), Targets: n.Test(c.ctx, e)}, nil
}
