package tables

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// Dialogs are permission prompts and questions of agents, answered by a
// human. A dialog lives up to its timeout (at most 10 minutes); each
// dialog_request blocks at most 40 s, and a caller whose wait ran out
// calls again with the dialog's id: repeated bounded waits on the SAME
// dialog, never a second one. A dialog nobody answers ends as a deny.
// An ended dialog is kept for endedTTL so a late wait still gets its
// answer and a second answer is told the first.

// endedTTL is how long an ended dialog's outcome is kept.
const endedTTL = 15 * time.Minute

// maxEnded bounds the ended dialogs kept.
const maxEnded = 512

// Dialog is one dialog and, once it ended, its outcome.
type Dialog struct {
	tools.Dialog
	Incarnation string              `json:"incarnation"` // the asking node's
	Outcome     tools.DialogOutcome `json:"outcome,omitzero"`
	Ended       time.Time           `json:"ended,omitzero"` // zero while open

	done  chan struct{} // closed when the dialog ended and its outcome was written
	timer *time.Timer   // ends it at Expires
}

func (d *Dialog) open() bool { return d.Ended.IsZero() }

type Dialogs struct {
	mu      sync.Mutex // guards every field and every dialog's Outcome/Ended
	next    int
	dialogs map[string]*Dialog
	// opening are the dialogs being written before they open: on disk,
	// not yet seen by anyone (Open).
	opening map[string]*Dialog
	always  map[string]bool // alwaysKey(incarnation, kind, tool, input, title): allowed for good
	disk    *Persister      // dialogs.json: every change synced
	hooks   DialogHooks
}

// DialogHooks are told of a dialog's life; each may be nil.
type DialogHooks struct {
	// Opened is told of a dialog that just opened (the tmux message to
	// humans, the agent's state); it runs on its own goroutine.
	Opened func(d tools.Dialog, incarnation string)
	// Ended is told of a dialog that just ended, under no lock.
	Ended func(d tools.Dialog, incarnation string, out tools.DialogOutcome)
	// Decided audits a dialog's end before its waiters are told, under
	// no lock.
	Decided func(d tools.Dialog, out tools.DialogOutcome)
}

// DialogsFile is the dialog table's file under Dir.
const DialogsFile = "dialogs.json"

// NewDialogs is an empty dialog table written by its own persister into
// st; Restore loads it.
func NewDialogs(st *Store, hooks DialogHooks) *Dialogs {
	t := &Dialogs{dialogs: map[string]*Dialog{}, opening: map[string]*Dialog{}, always: map[string]bool{}, hooks: hooks}
	t.disk = NewPersister(st, DialogsFile, t.snapshot)
	return t
}

// Persister is the table's file writer (Close ends it; tests gate it).
func (t *Dialogs) Persister() *Persister { return t.disk }

// Done is closed when the dialog ended and its outcome was written.
func (d *Dialog) Done() <-chan struct{} { return d.done }

// alwaysKey is what an "always" answer is remembered by: the asking
// node's life, the kind, and the exact tool and canonical input when the
// asker gave them (a permission hook does), else the exact title. Never
// the hook's title, which squeezes whitespace and cuts at 200 characters:
// "always" for `echo ok rm -rf X` must not allow `echo ok⏎rm -rf X`.
func alwaysKey(incarnation, kind, tool, input, title string) string {
	if tool != "" {
		return incarnation + "\x00" + kind + "\x00tool\x00" + tool + "\x00" + input
	}
	return incarnation + "\x00" + kind + "\x00title\x00" + title
}

func (d *Dialog) alwaysKey() string {
	return alwaysKey(d.Incarnation, d.Kind, d.Tool, d.Input, d.Title)
}

// outcome is out with what d asked, so the waiter can check it is its own.
func (d *Dialog) outcome(out tools.DialogOutcome) tools.DialogOutcome {
	out.Dialog, out.Kind, out.Tool, out.Input = d.ID, d.Kind, d.Tool, d.Input
	return out
}

// idNumber is N of an id dialog-N, 0 for any other id.
func idNumber(id string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "dialog-"))
	if err != nil || !strings.HasPrefix(id, "dialog-") || n < 0 {
		return 0
	}
	return n
}

// dialogsOnDisk is dialogs.json.
type dialogsOnDisk struct {
	Next    int       `json:"next"`
	Dialogs []*Dialog `json:"dialogs"`
	Always  []string  `json:"always"`
}

// snapshot is dialogs.json's content (the persister's, under t.mu).
func (t *Dialogs) snapshot() ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := dialogsOnDisk{Next: t.next, Dialogs: make([]*Dialog, 0, len(t.dialogs)+len(t.opening)), Always: make([]string, 0, len(t.always))}
	for _, x := range t.dialogs {
		d.Dialogs = append(d.Dialogs, x)
	}
	for _, x := range t.opening {
		d.Dialogs = append(d.Dialogs, x)
	}
	sort.Slice(d.Dialogs, func(i, j int) bool { return d.Dialogs[i].Created.Before(d.Dialogs[j].Created) })
	for k := range t.always {
		d.Always = append(d.Always, k)
	}
	sort.Strings(d.Always)
	return Marshal(DialogsFile, d)
}

// Restore loads dialogs.json: open dialogs of live incarnations are open
// again (their expiry kept), ended ones keep their outcome. Ids never
// repeat: the counter goes on above every id on disk, and when the file
// cannot be read it starts from the clock (milliseconds since 1970, far
// above any count handed out before).
func (t *Dialogs) Restore(st *Store, live map[string]bool) error {
	var d dialogsOnDisk
	if err := st.Load(DialogsFile, &d); err != nil {
		t.mu.Lock()
		t.next = max(t.next, int(time.Now().UnixMilli()))
		t.mu.Unlock()
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next = max(t.next, d.Next)
	for _, x := range d.Dialogs {
		if x != nil {
			t.next = max(t.next, idNumber(x.ID))
		}
	}
	for _, x := range d.Dialogs {
		if x == nil || !live[x.Incarnation] || x.ID == "" {
			continue
		}
		x.done = make(chan struct{})
		t.dialogs[x.ID] = x
		if x.open() {
			t.armLocked(x)
		} else {
			close(x.done)
		}
	}
	for _, k := range d.Always {
		inc, _, _ := strings.Cut(k, "\x00")
		if live[inc] {
			t.always[k] = true
		}
	}
	t.pruneLocked(time.Now())
	return nil
}

// armLocked starts the timer that ends an open dialog as a deny.
func (t *Dialogs) armLocked(d *Dialog) {
	d.timer = time.AfterFunc(time.Until(d.Expires), func() {
		t.End(d.ID, d.outcome(tools.DialogOutcome{TimedOut: true, DecidedBy: tools.DecidedByTimeout,
			Answer: tools.DialogAnswer{Mode: tools.AnswerDeny, Reason: "nobody answered in termsprawl before the dialog timed out"}}))
	})
}

// End ends an open dialog with out; false if it had already ended.
func (t *Dialogs) End(id string, out tools.DialogOutcome) bool {
	t.mu.Lock()
	d, ok := t.dialogs[id]
	if !ok || !d.open() {
		t.mu.Unlock()
		return false
	}
	d.Outcome, d.Ended = d.outcome(out), time.Now().UTC()
	out = d.Outcome
	if d.timer != nil {
		d.timer.Stop()
	}
	onEnd, onDecided, info, inc := t.hooks.Ended, t.hooks.Decided, d.Dialog, d.Incarnation
	t.mu.Unlock()
	// The outcome (an "always" answer with it) is on disk and in the
	// audit log before it is told (done wakes the waiters); a failure is
	// logged, the outcome stands in memory. Only the caller that ended it
	// closes done.
	_ = t.disk.Sync(context.Background())
	if onDecided != nil {
		onDecided(info, out)
	}
	close(d.done)
	if onEnd != nil {
		onEnd(info, inc, out)
	}
	return true
}

// pruneLocked drops ended dialogs past endedTTL, and the oldest beyond
// maxEnded.
func (t *Dialogs) pruneLocked(now time.Time) {
	var ended []*Dialog
	for id, d := range t.dialogs {
		switch {
		case d.open():
		case now.Sub(d.Ended) > endedTTL:
			delete(t.dialogs, id)
		default:
			ended = append(ended, d)
		}
	}
	if len(ended) > maxEnded {
		sort.Slice(ended, func(i, j int) bool { return ended[i].Ended.Before(ended[j].Ended) })
		for _, d := range ended[:len(ended)-maxEnded] {
			delete(t.dialogs, d.ID)
		}
	}
}

// Forget drops a gone node's dialogs and "always" answers; its open
// dialogs end as denies first, so a waiter is not left hanging.
func (t *Dialogs) Forget(incarnation string) {
	t.mu.Lock()
	for id, d := range t.opening {
		if d.Incarnation == incarnation {
			delete(t.opening, id) // its open fails (Open)
		}
	}
	t.mu.Unlock()
	t.EndOpen(incarnation)
	t.mu.Lock()
	for id, d := range t.dialogs {
		if d.Incarnation == incarnation {
			if d.timer != nil {
				d.timer.Stop()
			}
			delete(t.dialogs, id)
		}
	}
	prefix := incarnation + "\x00"
	for k := range t.always {
		if strings.HasPrefix(k, prefix) {
			delete(t.always, k)
		}
	}
	t.mu.Unlock()
	_ = t.disk.Sync(context.Background()) // a failure is logged
}

// EndOpen ends the open dialogs of an incarnation as a deny that says its
// node closed (CONTRACT §26): terminal_close calls it before the program
// is ended, so a hook waiting on a human hears why and ends.
func (t *Dialogs) EndOpen(incarnation string) {
	t.mu.Lock()
	var open []string
	for id, d := range t.dialogs {
		if d.Incarnation == incarnation && d.open() {
			open = append(open, id)
		}
	}
	t.mu.Unlock()
	for _, id := range open {
		t.End(id, tools.DialogOutcome{Dialog: id, Ended: true, DecidedBy: tools.DecidedByClosed, Answer: tools.DialogAnswer{Mode: tools.AnswerDeny, Reason: tools.DialogEndNodeClosed}})
	}
}

// List returns the open dialogs, oldest first.
func (t *Dialogs) List() []tools.Dialog {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]tools.Dialog, 0, len(t.dialogs))
	for _, d := range t.dialogs {
		if d.open() {
			out = append(out, d.Dialog)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// MaxDialogsPerNode bounds one node's pending dialogs (a quota).
const MaxDialogsPerNode = 8

// DialogRequest is what dialog_request asks (its arguments).
type DialogRequest struct {
	Kind      string   `json:"kind"`
	Title     string   `json:"title"`
	Options   []string `json:"options"`
	TimeoutMS int      `json:"timeout_ms"`
	WaitMS    int      `json:"wait_ms"`
	Dialog    string   `json:"dialog"`
	Tool      string   `json:"tool"`
	Input     string   `json:"input"`
	// Cwd is where the asking agent's shell is (policy rules resolve
	// relative redirections from it).
	Cwd string `json:"cwd"`
}

// DialogAnswer is dialog_answer's answer (its arguments).
type DialogAnswer struct {
	Dialog    string `json:"dialog"`
	Mode      string `json:"mode"`
	Selection string `json:"selection"`
	Reason    string `json:"reason"`
	Surface   string `json:"surface"`
}

// Outcome is d's outcome (zero while it is open).
func (t *Dialogs) Outcome(d *Dialog) tools.DialogOutcome {
	t.mu.Lock()
	defer t.mu.Unlock()
	return d.Outcome
}

// Resume finds the caller's own dialog to wait on again; kind, tool and
// input, when given, must be the dialog's (a waiter that says what it
// asked never takes the answer to another request).
func (t *Dialogs) Resume(caller tools.Identity, a DialogRequest) (*Dialog, error) {
	id := a.Dialog
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.dialogs[id]
	if !ok {
		return nil, tools.Errorf(tools.KindNotFound, "no dialog %q (it ended more than %v ago, its node closed, or it never existed): open a new one", id, endedTTL)
	}
	if d.Incarnation != caller.Incarnation {
		return nil, tools.Errorf(tools.KindForbidden, "dialog %q was opened by node %q: only it may wait on it", id, d.Node)
	}
	if (a.Kind != "" && a.Kind != d.Kind) || (a.Tool != "" && a.Tool != d.Tool) || (a.Input != "" && a.Input != d.Input) || (a.Title != "" && a.Title != d.Title) {
		return nil, tools.Errorf(tools.KindConflict, "dialog %q asks something else than this request (%s %s): it is not yours to wait on; open a new dialog", id, d.Kind, cmp.Or(d.Tool, d.Title)).
			WithDetails("dialog", id).WithDetails("mismatch", true)
	}
	return d, nil
}

// Open opens a new dialog for caller, unless an "always" answer covers it
// (remembered) and no ask rule says a human decides anyway (ask).
func (t *Dialogs) Open(ctx context.Context, caller tools.Identity, a DialogRequest, ask bool) (*Dialog, bool, error) {
	if a.Kind == "question" && len(a.Options) == 0 {
		return nil, false, tools.Errorf(tools.KindUsage, "a question needs options to choose from")
	}
	life := tools.DefaultWaitTimeout
	if a.TimeoutMS > 0 {
		life = time.Duration(a.TimeoutMS) * time.Millisecond
	}
	t.mu.Lock()
	if !ask && t.always[alwaysKey(caller.Incarnation, a.Kind, a.Tool, a.Input, a.Title)] {
		t.mu.Unlock()
		return nil, true, nil
	}
	t.pruneLocked(time.Now())
	open := 0
	for _, p := range t.dialogs {
		if p.Incarnation == caller.Incarnation && p.open() {
			open++
		}
	}
	for _, p := range t.opening {
		if p.Incarnation == caller.Incarnation {
			open++
		}
	}
	if open >= MaxDialogsPerNode {
		t.mu.Unlock()
		return nil, false, quotaErr("dialogs", MaxDialogsPerNode, "node %q has %d dialogs waiting for an answer (the limit is %d): wait for them to be answered or time out", caller.Node, open, MaxDialogsPerNode)
	}
	t.next++
	now := time.Now().UTC()
	d := &Dialog{Dialog: tools.Dialog{ID: fmt.Sprintf("dialog-%d", t.next), Node: caller.Node, Kind: a.Kind, Title: a.Title,
		Tool: a.Tool, Input: a.Input, Options: a.Options, Created: now, Expires: now.Add(life)}, Incarnation: caller.Incarnation, done: make(chan struct{})}
	t.opening[d.ID] = d
	t.mu.Unlock()
	// A dialog whose id is not on disk is refused: after a restart the
	// counter would hand the id out again, and a waiter on the old one
	// would take the new one's answer. So it is written while nobody
	// sees it (opening), and opens once on disk. (t.next stays: the
	// number is burnt in memory, and on disk it was never handed out.)
	err := t.disk.Sync(ctx)
	t.mu.Lock()
	_, still := t.opening[d.ID]
	delete(t.opening, d.ID)
	if err != nil || !still {
		t.mu.Unlock()
		if err == nil {
			return nil, false, tools.Errorf(tools.KindNotRun, "the dialog was not opened: node %q closed meanwhile", caller.Node)
		}
		t.disk.Mark() // the file drops it again
		return nil, false, tools.Errorf(tools.KindNotRun, "the dialog was not opened: termsprawl cannot save it (%v); free space in the state dir and ask again", err).
			WithDetails("cause", err.Error())
	}
	t.dialogs[d.ID] = d
	t.armLocked(d)
	onOpen := t.hooks.Opened
	t.mu.Unlock()
	if onOpen != nil {
		go onOpen(d.Dialog, d.Incarnation)
	}
	return d, false, nil
}

// Answer ends an open dialog with caller's answer: a human's (the
// operator's), or an agent's, which may only deny.
func (t *Dialogs) Answer(caller tools.Identity, a DialogAnswer) (tools.DialogOutcome, tools.DialogState, error) {
	t.mu.Lock()
	d, ok := t.dialogs[a.Dialog]
	if !ok {
		t.mu.Unlock()
		return tools.DialogOutcome{}, tools.DialogState{}, tools.Errorf(tools.KindNotFound, "no pending dialog %q: call dialog_list", a.Dialog)
	}
	if !d.open() {
		out, ended := d.Outcome, d.Ended
		t.mu.Unlock()
		return tools.DialogOutcome{}, tools.DialogState{}, alreadyEnded(a.Dialog, out, ended)
	}
	isDeny := a.Mode == tools.AnswerDeny
	if !isDeny && d.Kind == "permission" && caller.Role != tools.RoleOperator {
		t.mu.Unlock()
		return tools.DialogOutcome{}, tools.DialogState{}, tools.Errorf(tools.KindNotRun, "agents may only deny: %s (`termsprawl answer %s %s`)", tools.DialogMCPRefusal, a.Dialog, a.Mode)
	}
	if d.Kind == "question" && !isDeny && a.Selection == "" && len(d.Options) > 0 {
		// A question with choices is answered with one (CONTRACT §18).
		t.mu.Unlock()
		return tools.DialogOutcome{}, tools.DialogState{}, tools.Errorf(tools.KindUsage, "dialog %s is a question with choices: give selection, one of %q (or deny it)", a.Dialog, d.Options).WithDetails("choices", d.Options)
	}
	if d.Kind == "question" && !isDeny && a.Selection != "" && !slices.Contains(d.Options, a.Selection) {
		t.mu.Unlock()
		return tools.DialogOutcome{}, tools.DialogState{}, tools.Errorf(tools.KindUsage, "selection %q is not one of %q", a.Selection, d.Options)
	}
	if a.Mode == tools.AnswerAlways {
		t.always[d.alwaysKey()] = true
	}
	t.mu.Unlock()
	ans := tools.DialogAnswer{Mode: a.Mode, Selection: a.Selection, Reason: a.Reason}
	if ans.Reason == "" {
		ans.Reason = defaultReason(a.Mode, caller)
	}
	out := d.outcome(tools.DialogOutcome{Answer: ans, DecidedBy: tools.DecidedByHuman, Surface: cmp.Or(a.Surface, "cli")})
	if caller.Role != tools.RoleOperator {
		// An agent (over /call or MCP) may only deny: it is not a human.
		out.DecidedBy, out.Surface = tools.DecidedByAgent, "node "+caller.Node
	}
	if !t.End(d.ID, out) {
		// Another answer or the timeout got there first.
		t.mu.Lock()
		prev, ended := d.Outcome, d.Ended
		t.mu.Unlock()
		return tools.DialogOutcome{}, tools.DialogState{}, alreadyEnded(a.Dialog, prev, ended)
	}
	return out, tools.DialogState{Dialog: d.ID, Node: d.Node, Answered: true}, nil
}

func defaultReason(mode string, caller tools.Identity) string {
	who := "the human"
	if caller.Role != tools.RoleOperator {
		who = "node " + caller.Node
	}
	switch mode {
	case tools.AnswerDeny:
		return "denied by " + who + " in termsprawl"
	case tools.AnswerAlways:
		return "always allowed by " + who + " in termsprawl"
	}
	return "allowed by " + who + " in termsprawl"
}

// alreadyEnded is the conflict of an answer to a dialog that ended.
func alreadyEnded(id string, out tools.DialogOutcome, ended time.Time) error {
	if out.TimedOut {
		return tools.Errorf(tools.KindConflict, "dialog %s timed out at %s and was denied: it can no longer be answered (the agent will ask again if it still needs to)", id, ended.Format(time.RFC3339)).
			WithDetails("dialog", id).WithDetails("answer", out.Answer.Mode).WithDetails("timed_out", true)
	}
	return tools.Errorf(tools.KindConflict, "dialog %s was already answered (%s) at %s", id, out.Answer.Mode, ended.Format(time.RFC3339)).
		WithDetails("dialog", id).WithDetails("answer", out.Answer.Mode)
}
