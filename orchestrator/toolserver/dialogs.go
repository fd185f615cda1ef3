package toolserver

import (
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/tables"
	"github.com/termsprawl/termsprawl/tools"
)

// Dialogs are permission prompts and questions of agents, answered by a
// human; the table (its ids, "always" answers, expiry, the file) is
// orchestrator/tables' Dialogs. A dialog_request waits at most 40 s, and
// a caller whose wait ran out calls again with the dialog's id: repeated
// bounded waits on the SAME dialog, never a second one.

func dialogHandlers() map[string]handler {
	return map[string]handler{
		"dialog_request": reader(dialogRequest),
		"dialog_list":    reader(dialogList),
		"dialog_answer":  mutator(dialogAnswer),
	}
}

func dialogList(c *call, _ noArgs) (tools.DialogList, error) {
	return tools.DialogList{Dialogs: c.s.dialogs.List()}, nil
}

// dialogRequestArgs are dialog_request's arguments.
type dialogRequestArgs = tables.DialogRequest

func dialogRequest(c *call, a dialogRequestArgs) (tools.DialogOutcome, error) {
	t := c.s.dialogs
	var d *tables.Dialog
	var err error
	if a.Input != "" {
		if a.Input, err = tools.CanonicalJSON([]byte(a.Input)); err != nil {
			return tools.DialogOutcome{}, tools.Errorf(tools.KindUsage, "dialog_request: argument \"input\" must be the tool's input as JSON text: %w", err)
		}
	}
	if a.Dialog != "" {
		d, err = t.Resume(c.caller, a)
	} else {
		// Policies first (policy.go): a rule's allow or deny is final.
		ask := false
		if a.Kind == "permission" {
			var out tools.DialogOutcome
			var decided bool
			if out, decided, ask, err = c.s.decidePermission(c, a); err != nil || decided {
				return out, err
			}
		}
		var remembered bool
		d, remembered, err = t.Open(c.ctx, c.caller, a, ask)
		if remembered {
			out := tools.DialogOutcome{Answer: tools.DialogAnswer{Mode: tools.AnswerAllow, Reason: "always allowed in termsprawl"}, Remembered: true,
				Kind: a.Kind, Tool: a.Tool, Input: a.Input, DecidedBy: tools.DecidedByAlways}
			if err := c.s.auditRemembered(c, a); err != nil {
				return tools.DialogOutcome{}, err
			}
			return out, nil
		}
	}
	if err != nil {
		return tools.DialogOutcome{}, err
	}
	wait := tools.MaxWaitTimeout
	if a.WaitMS > 0 {
		wait = time.Duration(a.WaitMS) * time.Millisecond
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-d.Done():
		return t.Outcome(d), nil
	case <-timer.C:
		return tools.DialogOutcome{}, stillOpen(d, wait)
	case <-c.ctx.Done():
		return tools.DialogOutcome{}, tools.Errorf(tools.KindTimeout, "the wait on dialog %s was cancelled (%v); the dialog stays open: call dialog_request {\"dialog\":%q} again", d.ID, c.ctx.Err(), d.ID).
			WithDetails("dialog", d.ID).WithDetails("open", true)
	}
}

// stillOpen is the timeout of one bounded wait on a dialog that is open.
func stillOpen(d *tables.Dialog, wait time.Duration) error {
	err := tools.Errorf(tools.KindTimeout, "dialog %s is still waiting for a human after %v: call dialog_request {\"dialog\":%q} again (it ends as a deny at %s)",
		d.ID, wait, d.ID, d.Expires.Format(time.RFC3339)).WithDetails("dialog", d.ID).WithDetails("open", true).WithDetails("expires", d.Expires)
	err.Retryable = true
	return err
}

// dialogAnswerArgs are dialog_answer's arguments.
type dialogAnswerArgs = tables.DialogAnswer

func dialogAnswer(c *call, a dialogAnswerArgs) (tools.DialogOutcome, any, error) {
	out, state, err := c.s.dialogs.Answer(c.caller, a)
	if err != nil {
		return out, nil, err
	}
	return out, state, nil
}
