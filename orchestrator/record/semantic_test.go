package record

import (
	"encoding/json"
	"testing"
	"time"
)

// Semantic commits are events.jsonl lines; a trace finds the tree
// committed last at or before a moment.
func TestSemanticCommitsInATrace(t *testing.T) {
	t.Parallel()
	r, dir, clk := startRec(t, Meta{})
	r.Output([]byte("hello"))
	step := func(d time.Duration) { clk.mu.Lock(); clk.t = clk.t.Add(d); clk.mu.Unlock() }
	step(100 * time.Millisecond)
	r.Semantic(7, json.RawMessage(`{"id":"a","role":"button","bounds":{"row":0,"column":0,"width":1,"height":1}}`))
	step(200 * time.Millisecond)
	r.Semantic(9, json.RawMessage(`{"id":"b","role":"button","bounds":{"row":0,"column":0,"width":1,"height":1}}`))
	step(100 * time.Millisecond)
	r.Output([]byte(" world"))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	tr, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for _, c := range []struct {
		ms   int64
		want string
		rev  uint64
	}{{0, "", 0}, {99, "", 0}, {100, `"a"`, 7}, {299, `"a"`, 7}, {300, `"b"`, 9}, {10000, `"b"`, 9}} {
		raw, rev := tr.SemanticAt(c.ms)
		var n struct{ ID json.RawMessage }
		json.Unmarshal(raw, &n)
		if string(n.ID) != c.want || rev != c.rev {
			t.Errorf("at %d ms: %s @%d, want %s @%d", c.ms, raw, rev, c.want, c.rev)
		}
	}
}
