package orchestrator

import (
	"context"
	"sync"

	"github.com/termsprawl/termsprawl/orchestrator/statefile"
)

// A submit and a close are each several steps (text, settle, Enter; hang
// up, wait, kill): an orchestrator killed between two of them used to
// leave text at the prompt without its Enter (the next submit ran glued to
// it) or a program running for a node somebody closed. Each writes its
// intent next to the node's metadata before its first step (nodes/ID.input,
// nodes/ID.closing), and adoption finishes what the intent names: an
// interrupted submit's line is cleared, an interrupted close is finished
// (docs/CHOICES.md "An interrupted submit is cleared, not completed").

// Intent names the keyed call an input or a close serves: the caller's
// incarnation and its idempotency key. The tool server puts it in the
// context so the engine's intent files carry it, and what adoption did is
// reported per key (Interrupted).
type Intent = statefile.Intent

// recoveringCtxKey marks the close adoption finishes (no test pause).
type recoveringCtxKey struct{}

func recovering(ctx context.Context) bool { return ctx.Value(recoveringCtxKey{}) != nil }

// WithIntent returns ctx carrying the keyed call's intent
// (statefile.WithIntent).
func WithIntent(ctx context.Context, caller, key string) context.Context {
	return statefile.WithIntent(ctx, caller, key)
}

// Outcomes of an interrupted call, as adoption settled it.
const (
	OutcomeCleared     = statefile.OutcomeCleared
	OutcomeMaybe       = statefile.OutcomeMaybe
	OutcomeSubmitted   = statefile.OutcomeSubmitted
	OutcomeClosed      = statefile.OutcomeClosed
	OutcomeCloseFailed = statefile.OutcomeCloseFailed
)

// Interrupted is one call a killed orchestrator left unfinished and what
// adoption did with it (statefile.Interrupted).
type Interrupted = statefile.Interrupted

func (o *Orchestrator) inputMarkPath(id string) string {
	return statefile.Path(o.cfg.StateDir, id, statefile.Input)
}

func (o *Orchestrator) closeMarkPath(id string) string {
	return statefile.Path(o.cfg.StateDir, id, statefile.Closing)
}

// finishCloses ends, on adoption, the closes a killed orchestrator began
// (nodes/ID.closing), all at once, each on its own deadline.
func (o *Orchestrator) finishCloses(ctx context.Context) {
	var wg sync.WaitGroup
	for _, n := range o.sortedNodes() {
		m, ok := statefile.ReadMark(o.closeMarkPath(n.Meta.ID))
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := Interrupted{Node: n.Meta.ID, Op: "terminal_close", Intent: m.Intent, Outcome: OutcomeClosed}
			// The same intent again: a second kill finishes it next time.
			cctx := context.WithValue(WithIntent(ctx, m.Intent.Caller, m.Intent.Key), recoveringCtxKey{}, true)
			if err := o.CloseNode(cctx, n.Meta.ID); err != nil {
				in.Outcome, in.Err = OutcomeCloseFailed, err
				o.log.Error("finish an interrupted close", "node", n.Meta.ID, "err", err)
			} else {
				o.log.Info("finished an interrupted close", "node", n.Meta.ID)
			}
			o.interrupted.Add(in)
		}()
	}
	wg.Wait()
	// Marks of nodes that are not here any more (their session ended).
	ids, marks := statefile.OrphanCloseMarks(o.cfg.StateDir)
	for i, id := range ids {
		o.interrupted.Add(Interrupted{Node: id, Op: "terminal_close", Intent: marks[i].Intent, Outcome: OutcomeClosed})
	}
}

// Interrupted returns what adoption did with the submits and closes a
// killed orchestrator left unfinished. The tool server settles their
// idempotency keys with it, then calls AckInterrupted.
func (o *Orchestrator) Interrupted() []Interrupted { return o.interrupted.List() }

// AckInterrupted drops the intent files of the calls in list: their
// outcome is recorded elsewhere now. (Until then a crash settles them
// again on the next adoption: clearing a line twice is harmless.)
func (o *Orchestrator) AckInterrupted(list []Interrupted) { o.interrupted.Ack(o.cfg.StateDir, list) }
