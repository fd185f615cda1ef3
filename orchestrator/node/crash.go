package node

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/termsprawl/termsprawl/orchestrator/applog"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// termwright is a node's state for termwright's tools (CONTRACT §11): the
// last input by kind, the crash report and the application-log follower
// (the refs terminal_query handed out are node.refs).
type termwright struct {
	mu        sync.Mutex // guards lastInput, crash
	lastInput *tools.InputSummary
	crash     *tools.Crash

	// logs is set by startLogs before the follower's goroutine starts
	// and never changes after; it has its own mutex.
	Logs *applog.Follower
}

// Crash report bounds (CONTRACT §11).
const (
	crashTailLines = 40
	crashLineChars = 500
	inputSummary   = 64 // characters of typed text kept as the last input
)

// NoteInput records the last input sent to the node, by kind. Callers
// pass only a size for pasted text, never the text.
func (n *Node) NoteInput(kind, summary string) {
	n.TW.mu.Lock()
	n.TW.lastInput = &tools.InputSummary{Kind: kind, Summary: summary}
	n.TW.mu.Unlock()
}

// ClipText is typed text shortened for a summary.
func ClipText(s string) string {
	if utf8.RuneCountInString(s) <= inputSummary {
		return strconv.Quote(s)
	}
	return strconv.Quote(string([]rune(s)[:inputSummary])) + "…"
}

// SizeText is the summary of pasted text: its size only.
func SizeText(s string) string { return strconv.Itoa(len(s)) + " bytes" }

// SubmitKind is the kind and summary of terminal_submit: multi-line text
// is pasted (so only its size is kept).
func SubmitKind(text string) (string, string) {
	if strings.ContainsAny(text, "\n\r") {
		return "paste", SizeText(text) + ", then Enter"
	}
	if text == "" {
		return "keys", "Enter"
	}
	return "text", ClipText(text) + ", then Enter"
}

// recordCrash keeps the crash report of a program that ended on its own
// with a non-zero code or a signal; called on every seed that finds the
// pane dead (the pump goroutine, or attach before it starts), it refreshes
// the screen tail, which later seeds may complete.
func (n *Node) recordCrash(ctx context.Context, code int) {
	if n.IsClosing() {
		return // terminal_close ended it: not a crash
	}
	n.TW.mu.Lock()
	have := n.TW.crash != nil
	n.TW.mu.Unlock()
	var c tools.Crash
	if !have {
		if code == 0 {
			return
		}
		sig := n.deadSignal(ctx)
		if sig == 0 {
			// tmux 3.3a can mark the pane dead before it reaped the
			// program: then it knows no signal, and the zombie does.
			pid := n.Pid()
			if ws, ok := ZombieWaitOn(n.Srv, pid); ok && ws.Signaled() {
				sig = int(ws.Signal())
			}
		}
		if sig > 0 {
			c.Signal = signalName(sig)
		} else {
			c.ExitCode = &code
		}
		c.AfterMS = time.Since(n.Meta.Created).Milliseconds()
	}
	tail := n.excerpt(crashTailLines)
	for i, l := range tail {
		if utf8.RuneCountInString(l) > crashLineChars {
			tail[i] = string([]rune(l)[:crashLineChars])
		}
	}
	n.TW.mu.Lock()
	defer n.TW.mu.Unlock()
	if n.TW.crash == nil {
		c.LastInput = n.TW.lastInput
		c.ScreenTail = tail
		n.TW.crash = &c
		n.Log.Info("program crashed", "exit_code", derefCode(c.ExitCode), "signal", c.Signal, "after_ms", c.AfterMS)
		return
	}
	if len(tail) > 0 {
		n.TW.crash.ScreenTail = tail
	}
}

func derefCode(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// deadSignal asks tmux which signal ended the pane's program (0: none, or
// not known).
func (n *Node) deadSignal(ctx context.Context) int {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out, err := n.Cmd().Run(ctx, tmuxctl.Command("display-message", "-p", "-t", n.Pane, "#{pane_dead_signal}"))
	if err != nil || len(out) != 1 {
		return 0
	}
	v, _ := strconv.Atoi(strings.TrimSpace(out[0]))
	return v
}

var signalNames = map[int]string{1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
	8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM"}

func signalName(sig int) string {
	if s, ok := signalNames[sig]; ok {
		return s
	}
	return "SIG" + strconv.Itoa(sig)
}

// CrashReport is a copy of the node's crash report, or nil.
func (n *Node) CrashReport() *tools.Crash {
	n.TW.mu.Lock()
	defer n.TW.mu.Unlock()
	if n.TW.crash == nil {
		return nil
	}
	c := *n.TW.crash
	c.ScreenTail = append([]string{}, c.ScreenTail...)
	return &c
}

// WithCrash adds the crash report to the details of an error that says the
// program is gone.
func (n *Node) WithCrash(e *tools.Error) *tools.Error {
	if c := n.CrashReport(); c != nil {
		e = e.WithDetails("crash", c)
	}
	return e
}
