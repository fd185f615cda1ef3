package cli

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// Tasks and answers of the human CLI (CONTRACT §18): `termsprawl task
// NODE TEXT [--wait D]` hands a task to an agent as the operator
// (agent_send); `termsprawl answer ID --choice VALUE` picks one of a
// question's choices.

type taskCmd struct {
	Wait time.Duration `name:"wait" placeholder:"DURATION" help:"Wait up to this long for the agent's reply (agent_reply) and print it; exit 4 if none came in time."`
	JSON bool          `name:"json" help:"Print the receipt (with --wait: the task and its reply) as JSON."`
	Node string        `arg:"" name:"NODE" predictor:"node" help:"The agent: its id, else its name when unique, else a unique id prefix."`
	Text []string      `arg:"" name:"TEXT" help:"The task, submitted into the agent's prompt (several words are joined with spaces; -- before text that starts with -)."`
}

func (taskCmd) Examples() string {
	return `termsprawl task reviewer 'review the diff in ~/src/app'     # prints the task id
termsprawl task reviewer 'run the tests' --wait 10m          # and waits for the reply
termsprawlctl call agent_task '{"task":"task-1"}'           # read a task and its reply later`
}

// taskPollEvery is how often task --wait reads the task (agent_task has
// no blocking form; the agents guide says to poll it).
var taskPollEvery = [...]time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second}

// task runs `termsprawl task`.
func (h *human) task(c taskCmd) int {
	if c.Wait < 0 {
		return usageError(h.stderr, h.prefix(), errors.New("--wait must not be negative"), "")
	}
	text := strings.Join(c.Text, " ")
	if strings.TrimSpace(text) == "" {
		return usageError(h.stderr, h.prefix(), errors.New("the task is empty: give its text"), "example: termsprawl task reviewer 'review the diff'")
	}
	n, code := h.findNode(c.Node)
	if code != ExitOK {
		return code
	}
	if kindText(n) == tools.KindShell {
		fmt.Fprintf(h.stderr, "%s: node %s is a shell, not an agent: tasks go to agents (`termsprawl agent KIND` launches one); `termsprawl send %s TEXT` types into it\n", h.prefix(), n.Terminal, n.Terminal)
		return ExitNo
	}
	v, code := h.call("agent_send", map[string]any{"node": n.Terminal, "text": text, "message_id": newMessageID()})
	if code != ExitOK {
		return code
	}
	var r tools.ReceiptOf[tools.TaskSent]
	if err := tools.DecodeValue(v, &r); err != nil || r.Result.Task == "" {
		fmt.Fprintf(h.stderr, "%s: the receipt has no task id: %s\n", h.prefix(), clipText(string(v), 200))
		return ExitNo
	}
	id := r.Result.Task
	if c.Wait == 0 {
		if c.JSON {
			printReceipt(h.stdout, v)
		} else {
			fmt.Fprintln(h.stdout, id)
		}
		return ExitOK
	}
	deadline := time.Now().Add(c.Wait)
	for i := 0; ; i++ {
		t, code := callAs[tools.Task](h, "agent_task", map[string]any{"task": id})
		if code != ExitOK {
			return code
		}
		if t.State != tools.TaskPending {
			if c.JSON {
				_ = prettyJSON(h.stdout, t)
			} else {
				fmt.Fprintln(h.stdout, tools.VisibleText(t.Reply))
			}
			if t.State == tools.TaskFailed {
				fmt.Fprintf(h.stderr, "%s: %s replied that %s failed\n", h.prefix(), n.Terminal, id)
				return ExitNo
			}
			return ExitOK
		}
		left := time.Until(deadline)
		if left <= 0 {
			fmt.Fprintf(h.stderr, "%s: no reply from %s within %s; %s is still pending (`termsprawlctl call agent_task '{\"task\":\"%s\"}'` reads it later)\n", h.prefix(), n.Terminal, c.Wait, id, id)
			return ExitWaitTimeout
		}
		d := taskPollEvery[min(i, len(taskPollEvery)-1)]
		select {
		case <-time.After(min(d, left)):
		case <-h.ctx.Done():
			return ExitNo
		}
	}
}

// newMessageID is a fresh message_id for agent_send.
func newMessageID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "termsprawl-task-" + strconv.FormatInt(time.Now().UnixMilli(), 36) + "-" + hex.EncodeToString(b)
}

// answer runs `termsprawl answer ID [MODE] [--choice VALUE]`: a question
// with choices needs a choice (checked against dialog_list before
// answering); a choice alone means allow.
func (h *human) answer(c answerCmd) int {
	mode := c.Mode
	if mode == "" {
		if c.Selection == "" {
			return usageError(h.stderr, h.prefix(), errors.New("give a mode (deny, allow or always) or --choice VALUE"), "termsprawl answer "+c.Dialog+" allow")
		}
		mode = tools.AnswerAllow
	}
	if !slices.Contains([]string{tools.AnswerDeny, tools.AnswerAllow, tools.AnswerAlways}, mode) {
		return usageError(h.stderr, h.prefix(), fmt.Errorf("mode %q: give deny, allow or always", mode), "")
	}
	if d, ok := h.pendingDialog(c.Dialog); ok {
		if code := h.checkChoice(d, mode, c.Selection); code != ExitOK {
			return code
		}
	}
	args := map[string]any{"dialog": c.Dialog, "mode": mode, "surface": "cli"}
	if c.Selection != "" {
		args["selection"] = c.Selection
	}
	if c.Reason != "" {
		args["reason"] = c.Reason
	}
	return h.simple("dialog_answer", args, func(v json.RawMessage) {
		if c.JSON {
			printReceipt(h.stdout, v)
			return
		}
		note := ""
		if mode == tools.AnswerAlways {
			note = " (remembered for this node until it closes)"
		}
		if c.Selection != "" {
			note = fmt.Sprintf(" with choice %q", c.Selection) + note
		}
		fmt.Fprintf(h.stdout, "answered %s: %s%s\n", c.Dialog, mode, note)
	})
}

// pendingDialog finds id among the pending dialogs (ok false when it is
// not there or the list cannot be read: dialog_answer then says why).
func (h *human) pendingDialog(id string) (tools.Dialog, bool) {
	raw, code := h.prepare("dialog_list", map[string]any{})
	if code != ExitOK {
		return tools.Dialog{}, false
	}
	res := tools.Call(h.ctx, h.sessionFile(), tools.Request{Operation: "dialog_list", Args: raw}, tools.CallOptions{})
	var l tools.DialogList
	if !res.OK || tools.DecodeValue(res.Value, &l) != nil {
		return tools.Dialog{}, false
	}
	for _, d := range l.Dialogs {
		if d.ID == id {
			return d, true
		}
	}
	return tools.Dialog{}, false
}

// checkChoice refuses, as usage errors, an answer that does not fit the
// dialog: allow/always of a question with choices but no choice, a choice
// it does not offer, a choice for a permission prompt.
func (h *human) checkChoice(d tools.Dialog, mode, choice string) int {
	quoted := make([]string, len(d.Options))
	for i, o := range d.Options {
		quoted[i] = strconv.Quote(o)
	}
	switch {
	case choice != "" && len(d.Options) == 0:
		return usageError(h.stderr, h.prefix(), fmt.Errorf("%s (%s) offers no choices: answer it with deny, allow or always, without --choice", d.ID, d.Kind), "")
	case choice != "" && !slices.Contains(d.Options, choice):
		return usageError(h.stderr, h.prefix(), fmt.Errorf("--choice %q is not one of the choices of %s: %s", choice, d.ID, strings.Join(quoted, ", ")), "termsprawl answer "+d.ID+" --choice "+shellQuoteArg(d.Options[0]))
	case choice == "" && mode != tools.AnswerDeny && len(d.Options) > 0:
		return usageError(h.stderr, h.prefix(), fmt.Errorf("%s is a question with choices: pick one with --choice VALUE (one of %s), or deny it", d.ID, strings.Join(quoted, ", ")), "termsprawl answer "+d.ID+" --choice "+shellQuoteArg(d.Options[0]))
	}
	return ExitOK
}
