package semstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/semantic"
	"github.com/termsprawl/termsprawl/tools"
)

// Terminal is what the semantic waits and actions need of the node they
// act on: its screen revision, its end, and real input.
type Terminal interface {
	// Revision is the screen's revision now.
	Revision() uint64
	// Ended is closed when the node's life ends; EndErr is then the error
	// of a wait it stopped.
	Ended() <-chan struct{}
	EndErr() error
	// Click, Press and Type send real input (a mouse click at a cell,
	// key chords, text).
	Click(ctx context.Context, row, col int) error
	Press(ctx context.Context, keys string) error
	Type(ctx context.Context, text string) error
}

// VerifyTimeout bounds the verification of fill and check.
const VerifyTimeout = 5 * time.Second

// WaitCommit waits for a commit newer than seq whose tree satisfies ok,
// and returns it; false when timeout passed first. The end of t's life
// stops it with t's EndErr.
func (s *Store) WaitCommit(ctx context.Context, t Terminal, seq uint64, timeout time.Duration, ok func(root *semantic.Node) bool) (Commit, bool, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		cs, changed := s.After(seq)
		for _, c := range cs {
			if ok(c.Root) {
				return c, true, nil
			}
			seq = c.Seq
		}
		select {
		case <-changed:
		case <-timer.C:
			return Commit{}, false, nil
		case <-t.Ended():
			return Commit{}, false, t.EndErr()
		case <-ctx.Done():
			return Commit{}, false, ctx.Err()
		}
	}
}

// Wait is terminal_wait_for {wait: semantic}: satisfied only by a
// commit after the baseline. Without after the baseline is the latest
// commit at the call; with after it is baselineAt(after): the commits the
// first input sent at that revision had seen, else the newest commit
// stamped at or before it — and after: 0, the node's start, counts every
// commit kept.
//
// The result's status and exit code are the engine's to fill in.
func (s *Store) Wait(ctx context.Context, t Terminal, id string, spec tools.WaitSpec) (tools.WaitResult, error) {
	if spec.Locator == nil || spec.State == "" {
		return tools.WaitResult{}, usage("wait=semantic needs locator and state")
	}
	loc := LocatorOf(*spec.Locator)
	if _, err := loc.Compile(); err != nil {
		return tools.WaitResult{}, usage("locator: %v", err)
	}
	start := time.Now()
	var base uint64
	if spec.After != nil {
		base = s.BaselineAt(*spec.After)
	} else if c, ok := s.Latest(); ok {
		base = c.Seq
	}
	timeout := tools.DefaultWaitTimeout
	if spec.TimeoutMS > 0 {
		timeout = time.Duration(spec.TimeoutMS) * time.Millisecond
	}
	var after uint64
	if spec.After != nil {
		after = *spec.After
	} else {
		after = t.Revision()
	}
	var matched string
	c, ok, err := s.WaitCommit(ctx, t, base, timeout, func(root *semantic.Node) bool {
		ms, _ := semantic.Find(root, loc)
		if semantic.Holds(spec.State, ms) {
			if len(ms) > 0 {
				matched = semantic.Line(ms[0], 0)
			}
			return true
		}
		return false
	})
	if err != nil {
		return tools.WaitResult{}, err
	}
	res := tools.WaitResult{Wait: tools.WaitSemantic, After: after, ElapsedMS: time.Since(start).Milliseconds()}
	if !ok {
		res.TimedOut = true
		res.Revision = t.Revision()
		e := tools.Errorf(tools.KindTimeout, "timed out after %s: no commit of %q's semantic tree after the baseline had %s %s", timeout, id, loc, spec.State).
			WithDetails("semantic_tree", s.Availability())
		if s.Availability() == "unavailable" {
			e = e.WithDetails("advice", "the program has published no semantic tree (no probe): wait for screen text instead")
		}
		return res, e.WithDetails("semantic", s.Lines())
	}
	res.Matched, res.Revision = true, c.Rev
	if matched != "" {
		// The line of the commit that satisfied the wait, with its ref.
		f, _ := semantic.Find(c.Root, loc)
		if len(f) > 0 {
			matched = semantic.Line(f[0], c.Rev)
		}
	}
	res.Match = strings.TrimLeft(matched, " ")
	return res, nil
}

// Action is terminal_fill, terminal_check or terminal_uncheck.
type Action struct {
	Kind    string // fill, check, uncheck
	Locator tools.SemanticLocator
	Text    string
}

// Act performs an Action on t through real input and verifies it from a
// later commit.
func (s *Store) Act(ctx context.Context, t Terminal, id string, a Action) (tools.SemanticActionResult, error) {
	f, c, err := s.Locate(id, a.Locator)
	if err != nil {
		return tools.SemanticActionResult{}, err
	}
	res := tools.SemanticActionResult{Terminal: id, Revision: t.Revision(), Ref: semantic.RefOf(f.ID, c.Rev)}
	st := semantic.State{}
	if f.State != nil {
		st = *f.State
	}
	if st.Disabled {
		return res, tools.Errorf(tools.KindNotRun, "%s %q is disabled; nothing was sent", f.Role, f.Name).WithDetails("reason", "disabled")
	}
	click := func() error {
		row, col := semantic.Center(f.Bounds)
		return t.Click(ctx, row, col)
	}
	nodeIs := func(pred func(semantic.Flat) bool) func(*semantic.Node) bool {
		return func(root *semantic.Node) bool {
			g, ok := semantic.Lookup(root, f.ID)
			return ok && pred(g)
		}
	}
	flag := func(g semantic.Flat, get func(semantic.State) bool) bool {
		return g.State != nil && get(*g.State)
	}
	verify := func(seq uint64, what string, pred func(semantic.Flat) bool) error {
		vc, ok, err := s.WaitCommit(ctx, t, seq, VerifyTimeout, nodeIs(pred))
		if err != nil {
			return err
		}
		if !ok {
			return tools.Errorf(tools.KindTimeout, "terminal_%s: input was sent but no commit within %s showed %s %q %s; terminal_snapshot shows the tree", a.Kind, VerifyTimeout, f.Role, f.ID, what).
				WithDetails("ref", res.Ref).WithDetails("semantic", s.Lines())
		}
		res.Verified = semantic.RefOf(f.ID, vc.Rev)
		return nil
	}
	switch a.Kind {
	case "fill":
		if f.Role != "textbox" {
			return res, usage("terminal_fill: %s is a %s, not a textbox", semantic.Line(f, c.Rev), f.Role)
		}
		if !st.Focused {
			if err := click(); err != nil {
				return res, err
			}
			if err := verify(c.Seq, "focused", func(g semantic.Flat) bool { return flag(g, func(s semantic.State) bool { return s.Focused }) }); err != nil {
				return res, err
			}
		}
		cur, _ := s.Latest()
		if g, ok := semantic.Lookup(cur.Root, f.ID); ok && g.Value == a.Text {
			// Already the value: retyping it would leave the same tree,
			// and a probe sends no commit for an unchanged tree.
			res.Sent, res.Value = !st.Focused, a.Text
			res.Verified = semantic.RefOf(f.ID, cur.Rev)
			return res, nil
		}
		if err := t.Press(ctx, "End C-u"); err != nil {
			return res, err
		}
		if a.Text != "" {
			if err := t.Type(ctx, a.Text); err != nil {
				return res, err
			}
		}
		res.Sent = true
		res.Value = a.Text
		if err := verify(cur.Seq, fmt.Sprintf("value %q", a.Text), func(g semantic.Flat) bool { return g.Value == a.Text }); err != nil {
			return res, err
		}
	case "check", "uncheck":
		if f.Role != "checkbox" && f.Role != "radio" {
			return res, usage("terminal_%s: %s is a %s, not a checkbox or radio", a.Kind, semantic.Line(f, c.Rev), f.Role)
		}
		want := a.Kind == "check"
		if a.Kind == "uncheck" && f.Role == "radio" {
			return res, usage("terminal_uncheck: a radio is unchecked by checking another one of its group")
		}
		res.Checked = &want
		if st.Checked == want {
			res.Verified = res.Ref
			return res, nil
		}
		if err := click(); err != nil {
			return res, err
		}
		res.Sent = true
		if err := verify(c.Seq, map[bool]string{true: "checked", false: "unchecked"}[want], func(g semantic.Flat) bool {
			return flag(g, func(s semantic.State) bool { return s.Checked }) == want
		}); err != nil {
			return res, err
		}
	default:
		return res, usage("unknown semantic action %q", a.Kind)
	}
	return res, nil
}
