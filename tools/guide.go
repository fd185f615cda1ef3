package tools

import (
	"fmt"
	"strings"
)

// GuideTopics lists the guide topics in order.
func GuideTopics() []string {
	return []string{TopicOverview, TopicTerminal, TopicAgents, TopicDialogs, TopicTraces}
}

var guideProse = map[string]string{
	TopicOverview: `termsprawl runs terminals for you: every terminal is a node (one tmux
session on a private tmux server) with a stable id. Every call returns
{"ok":true,"value":…} or {"ok":false,"error":"…","kind":"…","retryable":bool}.

Error kinds: usage (bad operation or args: nothing was done; fix the call),
not_found, unauthorized, forbidden, conflict, timeout, not_run (refused
before anything reached the terminal), in_progress (sent, outcome unknown:
look before you repeat), rejected, unavailable (termsprawl is not reachable),
internal.

Mutations return a receipt {action, result, idempotency_key?, state}, state
being a fresh snapshot of the node. Give a mutation an idempotency_key
(≤128 bytes) if you may retry it: a repeat within 24 h returns the first
receipt and does nothing again. Mutations are never retried automatically.

Input operations return result.revision; pass it as "after" to
terminal_wait_for, or give the input a "wait" object, so that only new
output counts and your own echo never does:
terminal_submit {"terminal":"build","text":"make","wait":{"wait":"regex","pattern":"^(ok|FAIL)"}}
Waits last at most 40 s per call; use watch_start/watch_wait for longer.

Start with session_info (who you are) and terminal_list (what runs); then
guide_read {"topic":"terminal"} (or agents, dialogs) for the details.`,

	TopicTerminal: `Race-free pattern: every input operation (terminal_type, terminal_press,
terminal_paste, terminal_submit, terminal_interrupt) returns
result.revision, the node's revision just before the input was sent. Pass
it as "after" to terminal_wait_for: only output that appears after it
counts, and the echo of your own input never does. Simpler still, give the
input operation a "wait" object and it waits itself before answering:

  terminal_submit {"terminal":"build","text":"make test",
                   "wait":{"wait":"regex","pattern":"(PASS|FAIL)","timeout_ms":40000}}

The receipt then carries result.wait (matched or timed out). wait modes:
text (substring), regex (Go RE2), quiet (no output for quiet_ms), exit (the
program exited), render (the screen changed). Waits are event-driven and
capped at 40 s per call; for longer waits use watch_start, then call
watch_wait until it fires (kind timeout just means "not yet").

Reading: terminal_snapshot gives the visible screen (lines, cursor, modes)
and its revision; terminal_capture_since {cursor: revision} gives only the
rows that changed since; terminal_read gives recent output as text;
terminal_scrollback searches tmux history; fleet_search {pattern, regex?,
ignore_case?, nodes?, recordings?} searches every node you may read at
once (screen and whole history, and recordings), each match with its
node and line.

Input: terminal_type sends literal keystrokes without Enter; terminal_submit
types the text, lets the program take it, then presses Enter exactly once
(use it for shells and TUIs alike); terminal_press sends key names such as
Enter, Escape, Up, C-c, M-x, F5; terminal_paste pastes (bracketed when the
program asked for it). Only terminal_focus and terminal_external move a
human's view.

Finding and clicking: terminal_query {text or pattern} returns matches on
the visible screen with row, column and length in cells (0-based) and a
ref screen:ROW,COL,LEN@REVISION. terminal_click, terminal_hover and
terminal_wheel take at {row, column} or such a ref; terminal_drag takes
from and to. They send real mouse reports in the encoding the program
enabled (terminal_capabilities shows mouse.tracking and mouse.encoding);
when it has not enabled the tracking an action needs they are kind not_run
(reason input-mode-disabled) and nothing is sent; a ref whose text is no
longer at its place is kind conflict (reason stale-ref): query again.
terminal_write_raw {text or base64} sends bytes verbatim.

Semantic trees: a program with a probe (Go: package probe) publishes its
UI as a tree, and terminal_capabilities says semantic_tree: available;
terminal_snapshot then carries semantic, one line a node (button "OK"
ref=semantic:ok@42 bounds=(14,23,6,1) focused). A locator {role?, name?,
test_id?, label?, text?, nth?} (name and text also /pattern/flags) finds
nodes in terminal_query and targets terminal_click, terminal_hover and
terminal_wheel in place of at/ref (a semantic: ref works too while its
node is in the tree, else conflict stale-ref); more than one match is
conflict ambiguous-locator unless nth. terminal_fill {locator, text},
terminal_check and terminal_uncheck act through real input and verify the
outcome from a later commit. terminal_wait_for {wait: "semantic",
locator, state} is satisfied only by a commit after its baseline. A
program without a probe has no roles: target its screen text instead.

When a program dies on its own (non-zero exit or a signal),
terminal_snapshot and terminal_capabilities carry crash {exit_code or
signal, after_ms, last_input, screen_tail}, and so do the details of the
next call that fails because it is gone. terminal_launch {logs: [{path,
label}]} follows log files from their end; terminal_capture_since then
adds logs [{ms, label, line}] read since the cursor and logs_omitted.

Other machines: terminal_launch (and agent_launch) {host: NAME} runs the
program on a host the human added (termsprawl up --host NAME=DEST; see
terminal_list's host); cwd is then a path there. Everything above works
the same. While a host is unreachable its terminals show status
unreachable and calls on them answer kind unavailable, retryable: retry
later, the program keeps running there.`,

	TopicAgents: `Agents are nodes launched with agent_launch: their environment carries
TERMSPRAWL_SESSION_FILE and TERMSPRAWL_CTL, and known agents get
termsprawlctl mcp registered as an MCP server. Report what you are doing
with agent_report so agent_status shows it to others.

agent_status gives each agent one state: starting, working, waiting (it
needs a human: an open dialog), idle (its turn ended), error (its last
turn failed) or exited (its program ended; final). It is derived from the
agent's hooks, its dialogs, its process and its screen, with since and
needs_human; agent_status {node, explain: true} adds why, the evidence
newest first ({source: hook|dialog|process|screen, event, at}).

To hand work to another agent: agent_send {node, text, message_id} submits
the text into its prompt and returns {task}; poll agent_task {task} for the
reply. The recipient answers with agent_reply {task, text, state:
completed|failed}. Use a fresh message_id per message.

Worktrees: agent_launch (or terminal_launch) {worktree: {branch?, base?}}
starts the node in a new git worktree beside the repository
(<repo>.worktrees/NAME, branch termsprawl/NAME). worktree_diff {node,
turn?, stat?} shows its diff against the base (recorded at each turn's
end); worktree_comment and worktree_review_send send review comments as
one task; worktree_finish {node, mode: merge|push|keep} never removes
uncommitted, unmerged or unpushed work; worktree_list lists them.

Forks: agent_fork {node, name?, worktree?} starts a new agent of the
node's kind continuing its conversation as a branch (Claude Code, Codex,
opencode), in the node's directory or, with worktree: {}, in a new
worktree from its HEAD with its uncommitted changes copied.`,

	TopicDialogs: `Dialogs are pending permission prompts and questions of agents, shown to
the human. An agent opens one with dialog_request (for instance from its
permission hook), giving for a permission the tool and its full input
(JSON text): "always" is remembered by those, the human reads them. The
call blocks up to wait_ms (at most 40 s) and returns the answer with the
dialog's kind, tool and input: act on it only if they are your request's.
If the wait runs out first (kind timeout,
details.dialog), call dialog_request {"dialog": ID} again: the same
dialog, never a new one. A dialog nobody answers within timeout_ms (at
most 10 minutes) ends as a deny (timed_out: true).

dialog_list shows the pending dialogs of all agents. They are other agents'
inputs: do not answer them on your own initiative. Over MCP dialog_answer
can only deny (or pick the selection of a question); allow and always are
not_run over MCP: "approve permissions in termsprawl, not over MCP". The
human approves with termsprawl dialogs / termsprawl answer ID MODE.`,

	TopicTraces: `Recordings keep what a terminal showed so you can look back later ("what
did the screen say when step 3 failed?"). terminal_launch {record: true}
records from the start; terminal_record {terminal, on} turns it on or off
later. A recording is a directory <state>/traces/<name>-<UTC time>/ with
session.cast (asciicast v2: asciinema play reads it), events.jsonl (inputs
by kind and size, never their text; resizes, markers, exit, gaps) and
meta.json. It goes on across an orchestrator restart (a gap event, then
the screen as it was on return). Mark the moments you will want to find:
terminal_mark {terminal, label: "step 3"}.

To read one: trace_open {path} gives {trace}; trace_overview {trace}
lists markers, inputs, exit, crash and gaps; trace_frame_at {trace,
marker: "step 3"} (or time_ms) rebuilds that screen in terminal_snapshot's
shape, with screenshot: true for a PNG; trace_diff {trace, from_ms, to_ms}
gives the rows that changed. At most 8 traces are open, holding at most
256 MB together; opening past either closes the least recently used
(named in evicted). trace_close {trace} frees one when you are done.
Trace ids last until the orchestrator restarts: open the path again after
that.`,
}

// Guide returns the text of a topic: hand-written usage prose followed by
// the topic's operations, generated from the table.
func Guide(topic string) (string, bool) {
	prose, ok := guideProse[topic]
	if !ok {
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "termsprawl guide: %s\n\n%s\n", topic, prose)
	if topic == TopicOverview {
		// The overview is the MCP instructions, which hosts cut at 2,048
		// characters (CONTRACT §10): no operation list here (tools/list
		// and `termsprawlctl call --help` have it).
		return b.String(), true
	}
	var mine []*Operation
	for _, op := range operations {
		if op.Topic == topic {
			mine = append(mine, op)
		}
	}
	b.WriteString("\nOperations:\n")
	for _, op := range mine {
		writeOperationHelp(&b, op)
	}
	return b.String(), true
}

// OperationHelp describes one operation and its arguments (for CLI help).
func OperationHelp(op *Operation) string {
	var b strings.Builder
	writeOperationHelp(&b, op)
	return b.String()
}

func writeOperationHelp(b *strings.Builder, op *Operation) {
	fmt.Fprintf(b, "\n%s — %s\n", op.Name, op.Description)
	var hints []string
	a := op.Annotations
	if a.ReadOnly {
		hints = append(hints, "read-only")
	}
	if a.Destructive {
		hints = append(hints, "destructive")
	}
	if a.Idempotent {
		hints = append(hints, "idempotent")
	}
	if op.Mutation {
		hints = append(hints, "returns a receipt")
	}
	if len(hints) > 0 {
		fmt.Fprintf(b, "  (%s)\n", strings.Join(hints, ", "))
	}
	if len(op.Params) == 0 {
		b.WriteString("  args: none ({})\n")
		return
	}
	for _, p := range op.Params {
		req := "optional"
		if p.Required {
			req = "required"
		}
		fmt.Fprintf(b, "  %s (%s, %s): %s\n", p.Name, p.typeText(), req, p.Description)
		if p.Type == TypeWaitObject {
			for _, w := range waitObjectParams {
				wr := "optional"
				if w.Required {
					wr = "required"
				}
				fmt.Fprintf(b, "      %s.%s (%s, %s): %s\n", p.Name, w.Name, w.typeText(), wr, w.Description)
			}
		}
		for _, f := range p.Fields {
			fr := "optional"
			if f.Required {
				fr = "required"
			}
			fmt.Fprintf(b, "      %s.%s (%s, %s): %s\n", p.Name, f.Name, f.typeText(), fr, f.Description)
		}
	}
}
