package toolserver

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// dialog is a pending tools.Dialog with the channel its answer arrives on.
type dialog struct {
	tools.Dialog
	incarnation string // the asking node's
	answered    chan tools.DialogAnswer
}

type dialogTable struct {
	mu      sync.Mutex // guards all fields
	next    int
	pending map[string]*dialog
	always  map[string]bool // incarnation + kind + title allowed for good
}

func newDialogTable() *dialogTable {
	return &dialogTable{pending: map[string]*dialog{}, always: map[string]bool{}}
}

func alwaysKey(incarnation, kind, title string) string {
	return incarnation + "\x00" + kind + "\x00" + title
}

// forget drops a gone node's "always" answers.
func (t *dialogTable) forget(incarnation string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prefix := incarnation + "\x00"
	for k := range t.always {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			delete(t.always, k)
		}
	}
}

func (t *dialogTable) list() []tools.Dialog {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]tools.Dialog, 0, len(t.pending))
	for _, d := range t.pending {
		out = append(out, d.Dialog)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

func dialogHandlers() map[string]handler {
	return map[string]handler{
		"dialog_request": reader(dialogRequest),
		"dialog_list":    reader(dialogList),
		"dialog_answer":  mutator(dialogAnswer),
	}
}

func dialogList(c *call, _ noArgs) (tools.DialogList, error) {
	return tools.DialogList{Dialogs: c.s.dialogs.list()}, nil
}

type dialogRequestArgs struct {
	Kind      string   `json:"kind"`
	Title     string   `json:"title"`
	Options   []string `json:"options"`
	TimeoutMS int      `json:"timeout_ms"`
}

func dialogRequest(c *call, a dialogRequestArgs) (tools.DialogOutcome, error) {
	if a.Kind == "question" && len(a.Options) == 0 {
		return tools.DialogOutcome{}, tools.Errorf(tools.KindUsage, "a question needs options to choose from")
	}
	t := c.s.dialogs
	t.mu.Lock()
	if t.always[alwaysKey(c.caller.Incarnation, a.Kind, a.Title)] {
		t.mu.Unlock()
		return tools.DialogOutcome{Answer: tools.DialogAnswer{Mode: tools.AnswerAllow}, Remembered: true}, nil
	}
	open := 0
	for _, p := range t.pending {
		if p.incarnation == c.caller.Incarnation {
			open++
		}
	}
	if open >= maxDialogsPerNode {
		t.mu.Unlock()
		return tools.DialogOutcome{}, quotaErr("dialogs", maxDialogsPerNode, "node %q has %d dialogs waiting for an answer (the limit is %d): wait for them to be answered or time out", c.caller.Node, open, maxDialogsPerNode)
	}
	t.next++
	d := &dialog{Dialog: tools.Dialog{ID: fmt.Sprintf("dialog-%d", t.next), Node: c.caller.Node, Kind: a.Kind, Title: a.Title,
		Options: a.Options, Created: time.Now().UTC()}, incarnation: c.caller.Incarnation, answered: make(chan tools.DialogAnswer, 1)}
	t.pending[d.ID] = d
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.pending, d.ID)
		t.mu.Unlock()
	}()
	timeout := tools.DefaultWaitTimeout
	if a.TimeoutMS > 0 {
		timeout = time.Duration(a.TimeoutMS) * time.Millisecond
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case ans := <-d.answered:
		return tools.DialogOutcome{Dialog: d.ID, Answer: ans}, nil
	case <-timer.C:
		return tools.DialogOutcome{}, tools.Errorf(tools.KindTimeout, "dialog %s was not answered within %v: treat it as denied", d.ID, timeout).WithDetails("dialog", d.ID)
	case <-c.ctx.Done():
		return tools.DialogOutcome{}, tools.Errorf(tools.KindTimeout, "dialog %s abandoned: %w", d.ID, c.ctx.Err())
	}
}

type dialogAnswerArgs struct {
	Dialog    string `json:"dialog"`
	Mode      string `json:"mode"`
	Selection string `json:"selection"`
}

func dialogAnswer(c *call, a dialogAnswerArgs) (tools.DialogOutcome, any, error) {
	t := c.s.dialogs
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.pending[a.Dialog]
	if !ok {
		return tools.DialogOutcome{}, nil, tools.Errorf(tools.KindNotFound, "no pending dialog %q: call dialog_list", a.Dialog)
	}
	isDeny := a.Mode == tools.AnswerDeny
	if !isDeny && d.Kind == "permission" && c.caller.Role != tools.RoleOperator {
		return tools.DialogOutcome{}, nil, tools.Errorf(tools.KindNotRun, "agents may only deny: %s (`termsprawl answer %s %s`)", tools.DialogMCPRefusal, a.Dialog, a.Mode)
	}
	if d.Kind == "question" && !isDeny && a.Selection != "" && !slices.Contains(d.Options, a.Selection) {
		return tools.DialogOutcome{}, nil, tools.Errorf(tools.KindUsage, "selection %q is not one of %q", a.Selection, d.Options)
	}
	if a.Mode == tools.AnswerAlways {
		t.always[alwaysKey(d.incarnation, d.Kind, d.Title)] = true
	}
	ans := tools.DialogAnswer{Mode: a.Mode, Selection: a.Selection}
	d.answered <- ans
	delete(t.pending, a.Dialog)
	return tools.DialogOutcome{Dialog: d.ID, Answer: ans}, tools.DialogState{Dialog: d.ID, Node: d.Node, Answered: true}, nil
}
