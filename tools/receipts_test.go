package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type fakeClock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestReceiptStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := &fakeClock{t: time.Now()}
	s, err := openReceiptStore(dir, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"terminal":"a","text":"ls","idempotency_key":"k1"}`)
	receipt := json.RawMessage(`{"action":"terminal_type","result":{"revision":3},"idempotency_key":"k1","state":{}}`)

	if _, ok, err := s.Lookup("n1", "k1", "terminal_type", args); ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := s.Put("n1", "k1", "terminal_type", args, receipt); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.path("n1", "k1"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatal(fi.Mode(), err)
	}
	if strings.Contains(fi.Name(), "k1") || strings.Contains(fi.Name(), "n1") {
		t.Fatal("file name must be a hash")
	}

	// Same key, same args in another order and spacing: the same receipt.
	same := json.RawMessage(` { "text" : "ls", "terminal":"a" } `)
	got, ok, err := s.Lookup("n1", "k1", "terminal_type", same)
	if err != nil || !ok || string(got) != string(receipt) {
		t.Fatalf("%s %v %v", got, ok, err)
	}
	// Other args or operation: conflict.
	for _, tc := range []struct{ op, args string }{
		{"terminal_type", `{"terminal":"a","text":"rm"}`},
		{"terminal_paste", `{"terminal":"a","text":"ls"}`},
	} {
		_, ok, err := s.Lookup("n1", "k1", tc.op, json.RawMessage(tc.args))
		if ok || KindOf(err) != KindConflict {
			t.Fatalf("%s %s: %v %v", tc.op, tc.args, ok, err)
		}
	}
	// Another caller with the same key is independent.
	if _, ok, err := s.Lookup("n2", "k1", "terminal_type", args); ok || err != nil {
		t.Fatal(ok, err)
	}

	// Survives reopening.
	s2, err := openReceiptStore(dir, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s2.Lookup("n1", "k1", "terminal_type", args); !ok || err != nil || string(got) != string(receipt) {
		t.Fatal(ok, err)
	}

	// Expires after 24 h; the sweep on open removes the file.
	clock.add(ReceiptTTL - time.Minute)
	if _, ok, _ := s2.Lookup("n1", "k1", "terminal_type", args); !ok {
		t.Fatal("expired too early")
	}
	clock.add(2 * time.Minute)
	if _, ok, err := s2.Lookup("n1", "k1", "terminal_type", json.RawMessage(`{"other":1}`)); ok || err != nil {
		t.Fatalf("expired receipt still answers: %v %v", ok, err)
	}
	if err := s2.Put("n1", "k2", "terminal_type", args, receipt); err != nil {
		t.Fatal(err)
	}
	clock.add(ReceiptTTL + time.Hour)
	if _, err := openReceiptStore(dir, clock.now); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("expired receipts not swept: %v", entries)
	}

	if err := s.Put("n1", strings.Repeat("k", 129), "terminal_type", args, receipt); KindOf(err) != KindUsage {
		t.Fatal(err)
	}
	if err := s.Put("n1", "k3", "terminal_type", args, json.RawMessage(`{`)); err == nil {
		t.Fatal("invalid receipt stored")
	}
}

func TestReceiptEncodeTruncates(t *testing.T) {
	t.Parallel()
	r := Receipt{Action: "terminal_snapshot", Result: map[string]any{"revision": 9}, IdempotencyKey: "k",
		State: map[string]any{"lines": []string{strings.Repeat("x", MaxReceiptBytes)}}}
	raw, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > MaxReceiptBytes {
		t.Fatalf("%d bytes", len(raw))
	}
	var back struct {
		Action         string         `json:"action"`
		Result         map[string]any `json:"result"`
		IdempotencyKey string         `json:"idempotency_key"`
		State          map[string]any `json:"state"`
	}
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Action != "terminal_snapshot" || back.Result["revision"] != 9.0 || back.IdempotencyKey != "k" ||
		back.State["truncated"] != true || back.State["hint"] != "call terminal_snapshot" {
		t.Fatalf("%s", raw)
	}
	small, _ := Receipt{Action: "a", Result: 1, State: map[string]int{"x": 1}}.Encode()
	if string(small) != `{"action":"a","result":1,"state":{"x":1}}` {
		t.Fatalf("%s", small)
	}
}

func TestReceiptConcurrentSameKey(t *testing.T) {
	t.Parallel()
	s, err := OpenReceiptStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"terminal":"a","text":"ls"}`)
	var runs atomic.Int32
	var wg sync.WaitGroup
	results := make([]string, 8)
	replays := make([]bool, 8)
	// The run holds until every caller has come to Do, so they overlap
	// it (or come after it and replay: either way one run).
	var arrived sync.WaitGroup
	arrived.Add(len(results))
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			arrived.Done()
			r, replayed, err := s.Do(context.Background(), "n1", "k", "terminal_type", args, func() (json.RawMessage, error) {
				runs.Add(1)
				arrived.Wait()
				return json.RawMessage(`{"action":"terminal_type","result":{"n":1},"state":{}}`), nil
			})
			if err != nil {
				t.Error(err)
			}
			results[i], replays[i] = string(r), replayed
		}(i)
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Fatalf("ran %d times", runs.Load())
	}
	nReplays := 0
	for i, r := range results {
		if r != results[0] {
			t.Fatalf("different receipts: %s vs %s", r, results[0])
		}
		if replays[i] {
			nReplays++
		}
	}
	if nReplays != len(results)-1 {
		t.Fatalf("%d replays", nReplays)
	}

	// A waiter whose context ends gets in_progress.
	unlock, err := s.Begin(context.Background(), "n1", "busy")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = s.Begin(ctx, "n1", "busy")
	if e := AsError(err); e == nil || e.Kind != KindInProgress || !e.Retryable || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	unlock()
	unlock() // idempotent
	u2, err := s.Begin(context.Background(), "n1", "busy")
	if err != nil {
		t.Fatal(err)
	}
	u2()
	s.mu.Lock()
	n := len(s.locks)
	s.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d locks leaked", n)
	}

	// Failures are not stored; no key just runs.
	_, _, err = s.Do(context.Background(), "n1", "f", "terminal_type", args, func() (json.RawMessage, error) {
		return nil, Errorf(KindNotRun, "nope")
	})
	if KindOf(err) != KindNotRun {
		t.Fatal(err)
	}
	if _, ok, _ := s.Lookup("n1", "f", "terminal_type", args); ok {
		t.Fatal("failure stored")
	}
}

func TestCanonicalArgs(t *testing.T) {
	t.Parallel()
	a, _ := CanonicalArgs(json.RawMessage(`{"b":1,"a":{"y":"<",  "x":[1,2]},"idempotency_key":"k"}`))
	b, _ := CanonicalArgs(json.RawMessage(`{"a":{"x":[1,2],"y":"<"},"b":1}`))
	if a != b || a != `{"a":{"x":[1,2],"y":"<"},"b":1}` {
		t.Fatal(a, b)
	}
	if c, _ := CanonicalArgs(nil); c != "{}" {
		t.Fatal(c)
	}
}

// A kill during a receipt's write leaves its temporary file; the next
// start removes every one, however young (4 were left after 50 kill
// cycles), and keeps the receipts.
func TestReceiptStoreOpenRemovesTempFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := OpenReceiptStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put("node1", "k1", "terminal_submit", json.RawMessage(`{"terminal":"t","text":"x"}`), json.RawMessage(`{"action":"terminal_submit"}`)); err != nil {
		t.Fatal(err)
	}
	sub := s.callerDir("node1")
	leftovers := []string{filepath.Join(sub, ".x.json.tmp-123"), filepath.Join(dir, ".y.json.tmp-456")}
	for _, p := range leftovers {
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := OpenReceiptStore(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range leftovers {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s left after a restart: %v", p, err)
		}
	}
	if _, err := os.Stat(s.path("node1", "k1")); err != nil {
		t.Fatalf("the receipt was removed: %v", err)
	}
}
