package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/semantic"
	"github.com/termsprawl/termsprawl/orchestrator/semstore"
	"github.com/termsprawl/termsprawl/tools"
)

// Semantic trees (CONTRACT §22): the commits a node's probe publishes,
// kept per node (the latest and a bounded history), and the tools that
// target nodes of the tree. Validation, locators, lines and diffs are the
// pure room orchestrator/semantic.

// PublishSemantic commits a tree for node id, which must be the caller's
// own node (the tool server passes the caller's node; no other node's
// tree ever changes). A bad tree is a usage error with details.reason and
// changes nothing.
func (o *Orchestrator) PublishSemantic(id string, raw json.RawMessage) (tools.SemanticPublished, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.SemanticPublished{}, err
	}
	snap := n.snapshot()
	root, err := semantic.Decode(raw, snap.Columns, snap.Rows)
	if err != nil {
		var se *semantic.Error
		if errors.As(err, &se) {
			return tools.SemanticPublished{}, tools.Errorf(tools.KindUsage, "semantic_publish: %w; nothing was committed", err).WithDetails("reason", se.Reason)
		}
		return tools.SemanticPublished{}, usage("semantic_publish: %v", err)
	}
	c := n.sem.Add(semstore.Commit{Rev: n.scr.Revision(), Size: len(raw), Root: root, At: time.Now()})
	n.recordSemantic(c.Rev, raw)
	return tools.SemanticPublished{Terminal: id, Revision: c.Rev, Commit: c.Seq, Nodes: len(semantic.Flatten(root))}, nil
}

// semanticWaitTimeout bounds the verification of fill and check.
const semanticWaitTimeout = 5 * time.Second

// waitCommit waits for a commit newer than seq whose tree satisfies ok,
// and returns it.
func (n *node) waitCommit(ctx context.Context, seq uint64, timeout time.Duration, ok func(root *semantic.Node) bool) (semstore.Commit, bool, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		cs, changed := n.sem.After(seq)
		for _, c := range cs {
			if ok(c.Root) {
				return c, true, nil
			}
			seq = c.Seq
		}
		select {
		case <-changed:
		case <-t.C:
			return semstore.Commit{}, false, nil
		case <-n.closing:
			return semstore.Commit{}, false, n.withCrash(tools.Errorf(tools.KindNotFound, "terminal %q ended while waiting for a semantic commit", n.meta.ID))
		case <-ctx.Done():
			return semstore.Commit{}, false, ctx.Err()
		}
	}
}

// WaitSemantic is terminal_wait_for {wait: semantic}: satisfied only by a
// commit after the baseline. Without after the baseline is the latest
// commit at the call; with after it is baselineAt(after): the commits the
// first input sent at that revision had seen, else the newest commit
// stamped at or before it — and after: 0, the node's start, counts every
// commit kept.
func (o *Orchestrator) WaitSemantic(ctx context.Context, id string, spec tools.WaitSpec) (tools.WaitResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.WaitResult{}, err
	}
	if spec.Locator == nil || spec.State == "" {
		return tools.WaitResult{}, usage("wait=semantic needs locator and state")
	}
	loc := semstore.LocatorOf(*spec.Locator)
	if _, err := loc.Compile(); err != nil {
		return tools.WaitResult{}, usage("locator: %v", err)
	}
	start := time.Now()
	var base uint64
	if spec.After != nil {
		base = n.sem.BaselineAt(*spec.After)
	} else if c, ok := n.sem.Latest(); ok {
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
		after = n.scr.Revision()
	}
	var matched string
	c, ok, err := n.waitCommit(ctx, base, timeout, func(root *semantic.Node) bool {
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
	status, code, _ := n.state()
	res := tools.WaitResult{Wait: tools.WaitSemantic, After: after, Status: status, ExitCode: code, ElapsedMS: time.Since(start).Milliseconds()}
	if !ok {
		res.TimedOut = true
		res.Revision = n.scr.Revision()
		e := tools.Errorf(tools.KindTimeout, "timed out after %s: no commit of %q's semantic tree after the baseline had %s %s", timeout, id, loc, spec.State).
			WithDetails("semantic_tree", n.sem.Availability())
		if n.sem.Availability() == "unavailable" {
			e = e.WithDetails("advice", "the program has published no semantic tree (no probe): wait for screen text instead")
		}
		return res, e.WithDetails("semantic", n.sem.Lines())
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

// SemanticAction is terminal_fill, terminal_check or terminal_uncheck.
type SemanticAction struct {
	Kind    string // fill, check, uncheck
	Locator tools.SemanticLocator
	Text    string
}

// ActSemantic performs a SemanticAction through real input and verifies
// it from a later commit.
func (o *Orchestrator) ActSemantic(ctx context.Context, id string, a SemanticAction) (tools.SemanticActionResult, error) {
	n, err := o.lookup(id)
	if err != nil {
		return tools.SemanticActionResult{}, err
	}
	f, c, err := n.sem.Locate(id, a.Locator)
	if err != nil {
		return tools.SemanticActionResult{}, err
	}
	res := tools.SemanticActionResult{Terminal: id, Revision: n.scr.Revision(), Ref: semantic.RefOf(f.ID, c.Rev)}
	st := semantic.State{}
	if f.State != nil {
		st = *f.State
	}
	if st.Disabled {
		return res, tools.Errorf(tools.KindNotRun, "%s %q is disabled; nothing was sent", f.Role, f.Name).WithDetails("reason", "disabled")
	}
	click := func() error {
		row, col := semantic.Center(f.Bounds)
		_, err := o.Mouse(ctx, id, MouseSpec{Kind: "click", At: &tools.Cell{Row: row, Column: col}}, nil)
		return err
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
		vc, ok, err := n.waitCommit(ctx, seq, semanticWaitTimeout, nodeIs(pred))
		if err != nil {
			return err
		}
		if !ok {
			return tools.Errorf(tools.KindTimeout, "terminal_%s: input was sent but no commit within %s showed %s %q %s; terminal_snapshot shows the tree", a.Kind, semanticWaitTimeout, f.Role, f.ID, what).
				WithDetails("ref", res.Ref).WithDetails("semantic", n.sem.Lines())
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
		cur, _ := n.sem.Latest()
		if g, ok := semantic.Lookup(cur.Root, f.ID); ok && g.Value == a.Text {
			// Already the value: retyping it would leave the same tree,
			// and a probe sends no commit for an unchanged tree.
			res.Sent, res.Value = !st.Focused, a.Text
			res.Verified = semantic.RefOf(f.ID, cur.Rev)
			return res, nil
		}
		if _, err := o.Press(ctx, id, "End C-u", nil); err != nil {
			return res, err
		}
		if a.Text != "" {
			if _, err := o.Type(ctx, id, a.Text, nil); err != nil {
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

// recordSemantic notes a commit in the node's recording.
func (n *node) recordSemantic(rev uint64, tree json.RawMessage) {
	if rec := n.rec.Load(); rec != nil {
		rec.r.Semantic(rev, tree)
	}
}

// TraceSemanticAt is the compact lines of the tree a trace's program had
// committed last at ms (nil when none).
func (o *Orchestrator) TraceSemanticAt(id string, ms int64) []string {
	t, err := o.traces.Get(id)
	if err != nil {
		return nil
	}
	raw, rev := t.SemanticAt(ms)
	if raw == nil {
		return nil
	}
	var root semantic.Node
	if json.Unmarshal(raw, &root) != nil {
		return nil
	}
	return semantic.Lines(&root, rev)
}

// SemanticTree is node id's latest commit as matches in reading order
// (the monitor's view), false without one. It never wakes the node.
func (o *Orchestrator) SemanticTree(id string) (uint64, []tools.SemanticMatch, bool) {
	n := o.node(id)
	if n == nil {
		return 0, nil, false
	}
	c, ok := n.sem.Latest()
	if !ok {
		return 0, nil, false
	}
	flat := semantic.Flatten(c.Root)
	out := make([]tools.SemanticMatch, len(flat))
	for i, f := range flat {
		out[i] = semstore.MatchOf(f, c.Rev)
	}
	return c.Rev, out, true
}
