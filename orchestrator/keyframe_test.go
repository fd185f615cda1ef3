package orchestrator

import (
	"context"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/tools"
)

// A recorded node that prints more than a keyframe's spacing, slowly
// enough not to be a burst, gets keyframes of its mirror in
// events.jsonl, and the trace's last frame is the node's screen (x/vt's
// from a keyframe and the output after it).
func TestRecordingWritesKeyframes(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 10 s on a loaded 2-core machine")
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	id, dir := launchRecorded(t, o)
	ctx := tctx(t)
	// Paced well below a burst (a burst reseeds the mirror from tmux, and
	// no keyframe is taken from a reseeded mirror: keyframe.go); at 20 per
	// second a loaded CI machine fell into one and wrote none.
	if _, err := o.Submit(ctx, id, `for i in $(seq 1 50); do head -c 6000 /dev/zero | tr '\0' k; printf '\nchunk-%d\n' $i; sleep 0.15; done; echo kf-$((1+1))-done`,
		&tools.WaitSpec{Wait: tools.WaitText, Text: "kf-2-done", TimeoutMS: 40000}); err != nil {
		t.Fatal(err)
	}
	snap, err := o.Snapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Record(ctx, id, false); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range readEvents(t, dir) {
		if e.Type != "keyframe" {
			continue
		}
		n++
		if e.Screen == nil || e.CastEvents < 1 || !strings.Contains(strings.Join(e.Screen.Lines, "\n"), "kkkk") {
			t.Fatalf("keyframe %+v: no screen of the output", e)
		}
	}
	if n == 0 {
		t.Fatal("no keyframe in events.jsonl after 300 KB of output")
	}
	tr, err := record.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	got, _, err := tr.FrameAt(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	// The node's screen then, but for a prompt that may have come after
	// the snapshot: every row of the snapshot up to the done line.
	for i, line := range snap.Screen.Lines {
		if i >= len(got.Lines) || got.Lines[i] != line {
			t.Fatalf("the trace's last frame, row %d: %q, the node's screen: %q\n%s", i, got.Lines[min(i, len(got.Lines)-1)], line, strings.Join(got.Lines, "\n"))
		}
		if strings.HasPrefix(line, "kf-2-done") {
			break
		}
	}
}
