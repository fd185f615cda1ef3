package node

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/orchestrator/textwait"
	"github.com/termsprawl/termsprawl/tools"
)

// defaultQuietMS is the quiet period when a quiet wait names none.
const defaultQuietMS = tools.DefaultQuietMs

// Compiled is a checked tools.WaitSpec.
type Compiled struct {
	tools.WaitSpec
	re      *regexp.Regexp
	Timeout time.Duration
	quiet   time.Duration
}

// pattern is what a text or regex wait looks for.
func (c *Compiled) pattern() textwait.Pattern { return textwait.Pattern{Text: c.Text, Re: c.re} }

func CompileWait(spec tools.WaitSpec) (Compiled, error) {
	c := Compiled{WaitSpec: spec}
	switch spec.Wait {
	case tools.WaitText:
		if spec.Text == "" {
			return c, tools.Errorf(tools.KindUsage, `wait "text" needs a non-empty "text"`)
		}
	case tools.WaitRegex:
		if spec.Pattern == "" {
			return c, tools.Errorf(tools.KindUsage, `wait "regex" needs a "pattern"`)
		}
		re, err := regexp.Compile("(?m)" + spec.Pattern) // ^ and $ match at line ends (CONTRACT §10)
		if err != nil {
			return c, tools.Errorf(tools.KindUsage, "pattern %q does not compile: %w (Go RE2 syntax)", spec.Pattern, err)
		}
		c.re = re
	case tools.WaitQuiet, tools.WaitExit, tools.WaitRender:
	default:
		return c, tools.Errorf(tools.KindUsage, "unknown wait %q: use text, regex, quiet, exit or render", spec.Wait)
	}
	c.Timeout = tools.DefaultWaitTimeout
	if spec.TimeoutMS > 0 {
		c.Timeout = time.Duration(spec.TimeoutMS) * time.Millisecond
	}
	if c.Timeout > tools.MaxWaitTimeout {
		return c, tools.Errorf(tools.KindUsage, "timeout_ms %d is over the %d ms limit: use watch_start for longer waits", spec.TimeoutMS, tools.MaxWaitTimeout/time.Millisecond)
	}
	c.quiet = defaultQuietMS * time.Millisecond
	if spec.QuietMS > 0 {
		c.quiet = time.Duration(spec.QuietMS) * time.Millisecond
	}
	return c, nil
}

// WaitFor blocks until spec holds, the timeout passes or ctx ends. It
// sleeps on the mirror's change channel and the node's status channel.
// A timeout is a tools.WaitResult with TimedOut set, not an error.
func (n *Node) WaitFor(ctx context.Context, spec tools.WaitSpec) (tools.WaitResult, error) {
	c, err := CompileWait(spec)
	if err != nil {
		return tools.WaitResult{}, err
	}
	return n.WaitCompiled(ctx, c)
}

func (n *Node) WaitCompiled(ctx context.Context, c Compiled) (tools.WaitResult, error) {
	n.Observers.Add(1)
	defer func() {
		n.Observers.Add(-1)
		n.LastObserved.Store(time.Now().UnixNano())
	}()
	// The baseline is the revision when the call starts, before a sleeping
	// node is woken: output that arrived meanwhile shows in the wake's seed.
	start := time.Now()
	baseline := n.Scr.Revision()
	n.Observe(ctx)
	if c.After != nil {
		baseline = *c.After
		if cur := n.Scr.Revision(); baseline > cur {
			return tools.WaitResult{}, tools.Errorf(tools.KindUsage, "after %d is newer than the terminal's revision %d: pass a revision this terminal returned", baseline, cur)
		}
		if base := RevisionBase(n.Meta.Epoch); baseline < base {
			// From an earlier life of the orchestrator: that screen's
			// output is not kept, so nothing can be judged against it.
			return tools.WaitResult{}, RevisionErr(n.Meta.ID, "after", baseline, screen.ErrHistoryTruncated)
		}
	}
	deadline := time.NewTimer(c.Timeout)
	defer deadline.Stop()
	var quietTimer *time.Timer
	var quietC <-chan time.Time
	lastTotal := n.Stream.Total()
	if c.Wait == tools.WaitQuiet {
		quietTimer = time.NewTimer(c.quiet)
		defer quietTimer.Stop()
		quietC = quietTimer.C
	}
	result := func(matched bool, m string) tools.WaitResult {
		status, code, _ := n.State()
		return tools.WaitResult{Matched: matched, Wait: c.Wait, Revision: n.Scr.Revision(), After: baseline, Match: m,
			ElapsedMS: time.Since(start).Milliseconds(), Status: status, ExitCode: code}
	}
	var scan *textwait.Reg // text and regex waits: evaluated by the pump too
	if c.Wait == tools.WaitText || c.Wait == tools.WaitRegex {
		scan = n.addScan(textwait.New(c.pattern(), baseline))
		defer n.removeScan(scan)
	}
	for {
		if n.IsClosing() {
			// A gone node stays quiet, and its program has ended.
			if c.Wait == tools.WaitQuiet || c.Wait == tools.WaitExit {
				return result(true, ""), nil
			}
			return result(false, ""), tools.Errorf(tools.KindNotFound, "terminal %q was closed while the %s wait was in progress", n.Meta.ID, c.Wait)
		}
		if n.hooks().WaitLoop != nil {
			n.hooks().WaitLoop(n)
		}
		rev, changed := n.Scr.WaitState()
		status, statusCh := n.statusWait()
		if status == tools.StatusLost {
			// Its tmux server died (loseNode): the program is gone.
			if c.Wait == tools.WaitExit || c.Wait == tools.WaitQuiet {
				return result(true, ""), nil
			}
			return result(false, ""), tools.Errorf(tools.KindConflict, "terminal %q was lost (its tmux server died) before the %s wait was satisfied: termsprawl restore %s starts it again", n.Meta.ID, c.Wait, n.Meta.ID).
				WithDetails("status", status)
		}
		switch c.Wait {
		case tools.WaitRender:
			if rev > baseline {
				return result(true, ""), nil
			}
		case tools.WaitExit:
			if status == tools.StatusExited {
				return result(true, ""), nil
			}
		case tools.WaitText, tools.WaitRegex:
			if ok, m := scan.Eval(n.textSource(), nil); ok {
				return result(true, m), nil
			}
		}
		if status == tools.StatusExited && c.Wait != tools.WaitExit && c.Wait != tools.WaitQuiet {
			_, _, gone := n.State()
			// Output read before the death is already applied: nothing
			// more can come.
			if gone || c.Wait == tools.WaitRender || !n.outputPending() {
				r := result(false, "")
				return r, tools.Errorf(tools.KindConflict, "terminal %q exited before the %s wait was satisfied", n.Meta.ID, c.Wait).
					WithDetails("status", r.Status).WithDetails("exit_code", r.ExitCode).
					WithDetails("revision", r.Revision).WithDetails("excerpt", n.excerpt(10))
			}
		}
		if scan != nil && status != tools.StatusExited {
			// The pump takes the scan's turns and says when it holds. An
			// exited node's last output is waited for revision by
			// revision (above).
			changed = scan.Ready()
		}
		select {
		case <-changed:
			if quietTimer != nil {
				if !quietTimer.Stop() {
					<-quietTimer.C
				}
				quietTimer.Reset(c.quiet)
				// The output the mirror just applied is counted: only
				// bytes after it start the quiet over (else a quiet
				// wait took twice its time after the last change).
				lastTotal = n.Stream.Total()
			}
		case <-statusCh:
		case <-n.Closing:
		case <-quietC:
			// The mirror did not change, but tmux may still be sending
			// (the pump can be busy reseeding): quiet means no output.
			if total := n.Stream.Total(); total != lastTotal || n.Stream.Pending() {
				lastTotal = total
				quietTimer.Reset(c.quiet)
				if n.hooks().QuietAgain != nil {
					n.hooks().QuietAgain(n)
				}
				continue
			}
			return result(true, ""), nil
		case <-deadline.C:
			r := result(false, "")
			r.TimedOut = true
			r.Excerpt = n.excerpt(10)
			return r, nil
		case <-ctx.Done():
			return tools.WaitResult{}, tools.Errorf(tools.KindTimeout, "wait on %q cancelled: %w", n.Meta.ID, ctx.Err())
		}
	}
}

// outputPending reports whether the pane stream holds output the mirror
// has not applied yet.
func (n *Node) outputPending() bool { return n.Stream.Pending() }

// excerpt returns the last k non-empty-trailing rows of the screen.
func (n *Node) excerpt(k int) []string {
	rows := n.Scr.Rows()
	end := len(rows)
	for end > 0 && strings.TrimSpace(rows[end-1]) == "" {
		end--
	}
	start := max(end-k, 0)
	return append([]string(nil), rows[start:end]...)
}

// TimeoutError turns a timed-out tools.WaitResult into the contract's timeout
// error with a screen excerpt.
func TimeoutError(id string, r tools.WaitResult) error {
	return tools.Errorf(tools.KindTimeout, "terminal %q: %s wait timed out after %d ms", id, r.Wait, r.ElapsedMS).
		WithDetails("revision", r.Revision).WithDetails("after", r.After).
		WithDetails("excerpt", r.Excerpt).WithDetails("status", r.Status)
}
