package orchestrator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator/statefile"
)

// Adoption settles a submit a killed orchestrator left, by the phase its
// intent file names: text or enter → the line is cleared (never Enter),
// done → nothing is sent. The next input is never glued to the old text.
func TestAdoptionSettlesInterruptedSubmit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		phase, outcome string
		cleared        bool
	}{
		{statefile.PhaseText, OutcomeCleared, true},
		{statefile.PhaseEnter, OutcomeMaybe, true},
		{statefile.PhaseDone, OutcomeSubmitted, false},
	} {
		t.Run(tc.phase, func(t *testing.T) {
			srv, dir := newTestServer(t)
			o := openOrchestrator(t, srv, dir)
			id := launch(t, o, "bash", "--norc", "--noprofile")
			waitText(t, o, id, "bash-")
			ctx := tctx(t)
			if _, err := o.Type(ctx, id, "echo GLUE", nil); err != nil {
				t.Fatal(err)
			}
			// (A text wait does not see typed input at the cursor.)
			testenv.Until(10*time.Second, func() bool {
				snap, _ := o.Snapshot(context.Background(), id)
				return strings.Contains(strings.Join(snap.Lines, "\n"), "echo GLUE")
			})
			in := Intent{Caller: "op#1", Key: "k1"}
			if err := statefile.WriteMark(o.inputMarkPath(id), statefile.Mark{Op: "submit", Phase: tc.phase, Intent: in, Started: time.Now()}); err != nil {
				t.Fatal(err)
			}
			o.Close() // as if killed: the session and the files stay

			o2 := openOrchestrator(t, srv, dir)
			got := o2.Interrupted()
			if len(got) != 1 || got[0].Node != id || got[0].Outcome != tc.outcome || got[0].Intent != in || got[0].Op != "terminal_submit" {
				t.Fatalf("Interrupted() = %+v, want one %s submit of %s with its intent", got, tc.outcome, id)
			}
			o2.AckInterrupted(got)
			if _, ok := statefile.ReadMark(o2.inputMarkPath(id)); ok {
				t.Fatal("the intent file outlived its ack")
			}
			if _, err := o2.Submit(ctx, id, "echo ALONE", nil); err != nil {
				t.Fatal(err)
			}
			// Its output line: "ALONE" alone, or glued ("GLUEecho ALONE").
			var screen string
			ran := testenv.Until(10*time.Second, func() bool {
				snap, _ := o2.Snapshot(context.Background(), id)
				screen = strings.Join(snap.Lines, "\n")
				for _, l := range snap.Lines {
					if strings.TrimSpace(l) == "ALONE" || strings.TrimSpace(l) == "GLUEecho ALONE" {
						return true
					}
				}
				return false
			})
			if !ran {
				t.Fatalf("the next submit did not run:\n%s", screen)
			}
			glued := strings.Contains(screen, "GLUEecho")
			if tc.cleared && glued {
				t.Fatalf("the next submit was glued to the interrupted text:\n%s", screen)
			}
			if !tc.cleared && !glued {
				// Nothing was sent on adoption: the typed text stays (it
				// was the program's, typed by a completed call).
				t.Fatalf("adoption sent keys for a finished submit:\n%s", screen)
			}
		})
	}
}
