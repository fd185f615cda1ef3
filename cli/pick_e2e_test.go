package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// A human attached to a node in a real tmux client (a test-made outer
// tmux server runs `termsprawl attach work` in its pane) presses the answer key:
// the private server's binding opens the picker in a display-popup, which
// lists the pending dialogs oldest first and answers a permission dialog
// (allow) and a question dialog (a choice); the agents' dialog_request
// calls get those answers, and the popup closes when none is left. The
// status-line message of a new dialog names the binding (CONTRACT §16,
// §18).
func TestPickerInPopupE2E(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	e.upWith()
	work := strings.TrimSpace(e.must(e.ts, "new", "--name", "work", "--", "bash", "--norc", "--noprofile"))
	asker := strings.TrimSpace(e.must(e.ts, "new", "--name", "asker", "--", "bash", "--norc", "--noprofile"))
	askerSession := tools.SessionPath(e.state, asker)

	// The human's terminal: a pane of another tmux server.
	outer := tmuxtest.New(t)
	outer.Must("new-session", "-d", "-s", "o", "-x", "150", "-y", "45", "--",
		"env", "TERMSPRAWL_HOME="+e.state, "TERMSPRAWL_TMUX_SOCKET="+e.tmux.Socket, e.ts, "attach", work)
	screen := func() string { return outer.Must("capture-pane", "-p", "-t", "o") }
	waitScreen := func(what string, ok func(string) bool) string {
		t.Helper()
		var s string
		if !testenv.Until(30*time.Second, func() bool { s = screen(); return ok(s) }) {
			t.Fatalf("the human's terminal never showed %s; it shows:\n%s", what, s)
		}
		return s
	}
	if !testenv.Until(30*time.Second, func() bool {
		return strings.Contains(e.tmux.Must("list-clients", "-t", "=ts-"+work, "-F", "#{client_control_mode}"), "0")
	}) {
		t.Fatalf("no human client on ts-%s; outer pane:\n%s", work, screen())
	}

	// Two agents' dialogs, a permission first, then a question.
	ask := func(args map[string]any) (*proc, *syncBuffer) {
		b, _ := json.Marshal(args)
		out := &syncBuffer{}
		return e.start(e.ctl, out, &syncBuffer{}, "--session", askerSession, "call", "dialog_request", string(b)), out
	}
	permP, permOut := ask(map[string]any{"kind": "permission", "title": "Bash: npm test", "wait_ms": 40000})
	perm := e.waitDialog(asker, 20*time.Second)
	qP, qOut := ask(map[string]any{"kind": "question", "title": "Which database?", "options": []string{"staging", "production"}, "wait_ms": 40000})
	var question tools.Dialog
	if !testenv.Until(20*time.Second, func() bool {
		var l tools.DialogList
		e.op("dialog_list", map[string]any{}, &l)
		for _, d := range l.Dialogs {
			if d.Kind == "question" {
				question = d
			}
		}
		return question.ID != ""
	}) {
		t.Fatal("the question dialog never showed in termsprawl dialogs")
	}

	// The message humans see names the binding.
	var msgs string
	if !testenv.Until(20*time.Second, func() bool {
		msgs = e.tmux.Must("show-messages")
		return strings.Contains(msgs, "asks: Bash: npm test ("+tools.DefaultAnswerKey+" answers here, or termsprawl answer "+perm.ID+" allow|deny)")
	}) {
		t.Fatalf("no message naming the answer key; messages:\n%s", msgs)
	}

	// The answer key (no prefix), through the human's terminal.
	outer.Must("send-keys", "-t", "o", tools.DefaultAnswerKey)
	s := waitScreen("the picker", func(s string) bool {
		return strings.Contains(s, "pending dialogs, oldest first") && strings.Contains(s, "answer which?")
	})
	first, second := strings.Index(s, "1) "+perm.ID), strings.Index(s, "2) "+question.ID)
	if first < 0 || second < first {
		t.Fatalf("the picker does not list %s then %s:\n%s", perm.ID, question.ID, s)
	}
	if !strings.Contains(s, "Bash: npm test") || !strings.Contains(s, "(staging | production)") {
		t.Fatalf("the picker does not show the titles and choices:\n%s", s)
	}

	// The permission: 1, then a (allow).
	outer.Must("send-keys", "-t", "o", "1", "Enter")
	waitScreen("the permission's choices", func(s string) bool { return strings.Contains(s, "a allow, d deny") })
	outer.Must("send-keys", "-t", "o", "a", "Enter")
	if !permP.waitExit(20 * time.Second) {
		t.Fatalf("dialog_request of the permission did not return; screen:\n%s", screen())
	}
	var pr struct {
		OK    bool                `json:"ok"`
		Value tools.DialogOutcome `json:"value"`
	}
	if err := json.Unmarshal([]byte(permOut.String()), &pr); err != nil || !pr.OK || pr.Value.Answer.Mode != tools.AnswerAllow {
		t.Fatalf("the permission's agent got %s (%v), want allow", permOut.String(), err)
	}

	// The question, now alone in the list: Enter, then its second choice.
	waitScreen("the question alone", func(s string) bool {
		return strings.Contains(s, "answered "+perm.ID) && strings.Contains(s, "answer it? [Enter or 1")
	})
	outer.Must("send-keys", "-t", "o", "Enter")
	waitScreen("the question's choices", func(s string) bool {
		return strings.Contains(s, "2) production") && strings.Contains(s, "choose [1-2]")
	})
	outer.Must("send-keys", "-t", "o", "2", "Enter")
	if !qP.waitExit(20 * time.Second) {
		t.Fatalf("dialog_request of the question did not return; screen:\n%s", screen())
	}
	var qr struct {
		OK    bool                `json:"ok"`
		Value tools.DialogOutcome `json:"value"`
	}
	if err := json.Unmarshal([]byte(qOut.String()), &qr); err != nil || !qr.OK || qr.Value.Answer.Mode != tools.AnswerAllow || qr.Value.Answer.Selection != "production" {
		t.Fatalf("the question's agent got %s (%v), want allow with production", qOut.String(), err)
	}

	// Nothing is pending: the popup has closed, the node's screen is back.
	waitScreen("the popup closed", func(s string) bool { return !strings.Contains(s, "pending dialogs") })
}
