package toolserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/agentstate"
	"github.com/termsprawl/termsprawl/tools"
)

// When an agent starts waiting on a human (it opened a permission dialog
// or reported state waiting), the humans attached to termsprawl's tmux
// servers see one line naming the node and the command that answers it
// (CONTRACT §16).

// notifyTimeout bounds one round of tmux messages.
const notifyTimeout = 5 * time.Second

// maxNotifyTitle bounds the part of a dialog's title in the message.
const maxNotifyTitle = 80

// notifyWaiting shows the message on its own goroutine (the caller is a
// request that must not wait on tmux). The goroutine ends after at most
// notifyTimeout.
func (s *Server) notifyWaiting(node, what, dialogID string) {
	if dialogID == "" {
		// The agent's own "needs your permission" notification follows its
		// dialog by a few seconds: the dialog's line (its id and the answer
		// key) stays on the status line instead of a vaguer one.
		for _, d := range s.dialogs.List() {
			if d.Node == node {
				return
			}
		}
	}
	_, answer := s.eng.agents.Keys()
	msg := waitingMessage(node, what, dialogID, answer)
	go func() {
		ctx, cancel := context.WithTimeout(s.ctx, notifyTimeout)
		defer cancel()
		if _, err := s.eng.agents.NotifyHumans(ctx, msg); err != nil {
			s.log.Debug("notify humans", "node", node, "err", err)
		}
	}()
}

// waitingMessage is the one line humans see: for a dialog, it names the
// binding that opens the picker and the command that answers it.
func waitingMessage(node, what, dialogID, answerKey string) string {
	what = oneLine(what, maxNotifyTitle)
	if dialogID != "" {
		// The binding of the private servers answers it from any node
		// (CONTRACT §18); the command works from any terminal.
		return fmt.Sprintf("termsprawl: %s asks: %s (%s answers here, or termsprawl answer %s allow|deny)", node, what, answerKey, dialogID)
	}
	if what != "" {
		what = ": " + what
	}
	return fmt.Sprintf("termsprawl: %s is waiting for you%s (termsprawl attach %s)", node, what, node)
}

// oneLine squeezes whitespace and cuts s to max runes with an ellipsis.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

// dialogOpened runs when a dialog opens: the node's state becomes
// waiting and the humans are told.
func (s *Server) dialogOpened(d tools.Dialog, incarnation string) {
	defer s.kickStream()
	if m, ok := s.eng.agents.Meta(d.Node); ok && m.Incarnation() == incarnation && m.Agent != "" {
		s.evidence(d.Node, incarnation, tools.Evidence{Source: tools.SourceDialog, Event: agentstate.DialogOpened, Detail: d.ID + ": " + oneLine(d.Title, maxNotifyTitle)},
			"asks: "+oneLine(d.Title, maxNotifyTitle), d.ID)
	}
	s.notifyWaiting(d.Node, d.Title, d.ID)
}

// dialogEnded runs when a dialog ends: an agent waiting on it is working
// again (its hooks report the next state).
func (s *Server) dialogEnded(d tools.Dialog, incarnation string, out tools.DialogOutcome) {
	defer s.kickStream()
	if m, ok := s.eng.agents.Meta(d.Node); ok && m.Incarnation() == incarnation && m.Agent != "" {
		msg := fmt.Sprintf("%s: %s", out.Answer.Mode, oneLine(d.Title, maxNotifyTitle))
		if out.TimedOut {
			msg = "timed out (denied): " + oneLine(d.Title, maxNotifyTitle)
		}
		ev := agentstate.DialogAnswered
		if out.TimedOut {
			ev = agentstate.DialogTimedOut
		}
		s.evidence(d.Node, incarnation, tools.Evidence{Source: tools.SourceDialog, Event: ev, Detail: d.ID + ": " + msg}, msg, d.ID)
	}
}
