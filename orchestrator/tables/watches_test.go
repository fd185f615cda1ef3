package tables

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// chanWait is a Wait that fires when fire is closed.
type chanWait struct{ fire chan struct{} }

func (w chanWait) Run(ctx context.Context) (tools.WaitResult, error) {
	select {
	case <-w.fire:
		return tools.WaitResult{Matched: true, Wait: "text", Match: "ready"}, nil
	case <-ctx.Done():
		return tools.WaitResult{}, ctx.Err()
	}
}

// A watch fires, is read once, and a stranger may neither read nor
// cancel it; a node's quota is refused with the quota's details.
func TestWatchesStartWaitCancel(t *testing.T) {
	t.Parallel()
	st, _ := testStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := NewWatches(ctx, st)
	defer w.Persister().Close()
	fire := make(chan struct{})
	started, err := w.Start(ctx, testAgent, "n2", tools.WaitSpec{Text: "ready"}, chanWait{fire}, 5)
	if err != nil || started.Watch != "watch-1" || started.After != 5 {
		t.Fatalf("start: %+v %v", started, err)
	}
	stranger := tools.Identity{Node: "n3", Role: tools.RoleAgent, Incarnation: "n3-life"}
	if _, err := w.Wait(ctx, stranger, started.Watch, time.Second); tools.KindOf(err) != tools.KindForbidden {
		t.Fatalf("a stranger's wait: %v, want forbidden", err)
	}
	if _, err := w.Cancel(stranger, started.Watch); tools.KindOf(err) != tools.KindForbidden {
		t.Fatalf("a stranger's cancel: %v, want forbidden", err)
	}
	if _, err := w.Wait(ctx, testAgent, started.Watch, time.Millisecond); tools.KindOf(err) != tools.KindTimeout {
		t.Fatalf("a wait before it fired: %v, want timeout", err)
	}
	if l := w.List(); len(l) != 1 || l[0].Fired || l[0].Terminal != "n2" || l[0].Owner != "n1" {
		t.Fatalf("list: %+v", l)
	}
	close(fire)
	got, err := w.Wait(ctx, testAgent, started.Watch, time.Minute)
	if err != nil || !got.Fired || got.Result.Match != "ready" {
		t.Fatalf("fired: %+v %v", got, err)
	}
	if _, err := w.Wait(ctx, testAgent, started.Watch, time.Second); tools.KindOf(err) != tools.KindNotFound {
		t.Fatalf("a second read: %v, want not_found", err)
	}
	if c, err := w.Cancel(testAgent, started.Watch); err != nil || c.Cancelled {
		t.Fatalf("cancel of a read watch: %+v %v", c, err)
	}
	for range MaxWatchesPerNode {
		if _, err := w.Start(ctx, testAgent, "n2", tools.WaitSpec{Text: "x"}, chanWait{make(chan struct{})}, 0); err != nil {
			t.Fatal(err)
		}
	}
	_, err = w.Start(ctx, testAgent, "n2", tools.WaitSpec{Text: "x"}, chanWait{make(chan struct{})}, 0)
	if tools.KindOf(err) != tools.KindRejected || tools.AsError(err).Details["quota"] != "watches" {
		t.Fatalf("past the quota: %v, want rejected with details quota=watches", err)
	}
	w.Forget(testAgent.Incarnation)
	if l := w.List(); len(l) != 0 {
		t.Fatalf("after forget: %+v", l)
	}
}

// watches.json as an older version wrote it loads: a fired watch keeps
// its result for watch_wait, a live one is armed again from the current
// revision, a dead incarnation's is dropped; written back, it keeps the
// same form.
func TestWatchesFileFromAnOlderVersion(t *testing.T) {
	t.Parallel()
	const old = `{
  "next": 9,
  "watches": [
    {
      "watch": "watch-8",
      "terminal": "n2",
      "owner_node": "n1",
      "owner_role": "agent",
      "incarnation": "n1-life",
      "spec": {
        "wait": "text",
        "text": "done"
      },
      "after": 40,
      "started": "2126-12-01T10:00:00Z",
      "result": {
        "matched": true,
        "wait": "text",
        "revision": 42,
        "after": 40,
        "match": "done",
        "elapsed_ms": 12,
        "status": "running"
      }
    },
    {
      "watch": "watch-9",
      "terminal": "n2",
      "owner_node": "n1",
      "owner_role": "agent",
      "incarnation": "n1-life",
      "spec": {
        "wait": "text",
        "text": "later"
      },
      "after": 41,
      "started": "2126-12-01T10:00:01Z"
    },
    {
      "watch": "watch-7",
      "terminal": "n2",
      "owner_node": "gone",
      "owner_role": "agent",
      "incarnation": "gone-life",
      "spec": {
        "wait": "text",
        "text": "x"
      },
      "after": 1,
      "started": "2126-12-01T09:00:00Z"
    }
  ]
}
`
	st, dir := testStore(t)
	path := filepath.Join(dir, Dir, WatchesFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	// The old file round-trips through the on-disk form byte for byte.
	var d watchesOnDisk
	if err := st.Load(WatchesFile, &d); err != nil {
		t.Fatal(err)
	}
	if raw, err := Marshal(WatchesFile, d); err != nil || string(raw) != old {
		t.Fatalf("watches.json does not round-trip (%v):\n%s", err, raw)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := NewWatches(ctx, st)
	defer w.Persister().Close()
	fire := make(chan struct{})
	var armed []string
	prepare := func(terminal string, spec tools.WaitSpec, _ time.Duration) (Wait, uint64, error) {
		armed = append(armed, terminal+" "+spec.Text)
		if spec.After != nil {
			t.Errorf("a restored watch waits after the old epoch's revision %d", *spec.After)
		}
		return chanWait{fire}, 100, nil
	}
	if err := w.Restore(map[string]bool{testAgent.Incarnation: true}, prepare, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	if len(armed) != 1 || armed[0] != "n2 later" {
		t.Fatalf("armed again: %q, want the live watch only", armed)
	}
	got, err := w.Wait(ctx, testAgent, "watch-8", time.Minute)
	if err != nil || !got.Fired || got.Result.Match != "done" {
		t.Fatalf("the fired watch after restore: %+v %v", got, err)
	}
	if l := w.List(); len(l) != 1 || l[0].ID != "watch-9" {
		t.Fatalf("after restore and a read: %+v", l)
	}
	close(fire)
	if got, err := w.Wait(ctx, testAgent, "watch-9", time.Minute); err != nil || !got.Fired {
		t.Fatalf("the live watch after restore: %+v %v", got, err)
	}
	s, err := w.Start(ctx, testAgent, "n2", tools.WaitSpec{Text: "y"}, chanWait{make(chan struct{})}, 0)
	if err != nil || s.Watch != "watch-10" {
		t.Fatalf("the next id: %+v %v, want watch-10", s, err)
	}
}
