package tools

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// The table's declarations agree with each other: value and state types,
// and nothing that creates or ends something annotated read-only.
func TestTableDeclarations(t *testing.T) {
	t.Parallel()
	if err := checkTable(Operations()); err != nil {
		t.Fatal(err)
	}
	bad := &Operation{Name: "x_start", Result: struct{}{}, Mutation: true, State: struct{}{}, Annotations: Annotations{ReadOnly: true}}
	if err := checkTable([]*Operation{bad}); err == nil {
		t.Fatal("a read-only mutation passed checkTable")
	}
}

// watch_start creates a watch and watch_cancel ends one: --retry never
// repeats them (a repeat would make a duplicate watch).
func TestRetryNeverRepeatsWatches(t *testing.T) {
	st := newTestState(t)
	var hits atomic.Int32
	srv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(202)
		fmt.Fprint(w, `{"ok":false,"error":"sent, outcome unknown","kind":"in_progress","retryable":true}`)
	})
	st.writeEndpoint(t, srv.URL+"/call", "i1")
	for _, c := range []struct{ op, args string }{
		{"watch_start", `{"terminal":"a","wait":"exit"}`},
		{"watch_cancel", `{"watch":"watch-1"}`},
	} {
		hits.Store(0)
		res := call(t, st.session, c.op, c.args, CallOptions{Retry: 5})
		if res.OK || hits.Load() != 1 {
			t.Errorf("%s with --retry 5: %d requests, want 1 (%+v)", c.op, hits.Load(), res)
		}
	}
	// A read is repeated.
	hits.Store(0)
	call(t, st.session, "terminal_list", `{}`, CallOptions{Retry: 2})
	if hits.Load() != 3 {
		t.Errorf("terminal_list with --retry 2: %d requests, want 3", hits.Load())
	}
}

// Args are strict JSON: a key named twice, at any depth, is refused
// before anything runs (encoding/json would keep the last one).
func TestArgsRefuseDuplicateKeys(t *testing.T) {
	t.Parallel()
	op, _ := Lookup("terminal_submit")
	for _, args := range []string{
		`{"terminal":"a","terminal":"b","text":"x"}`,
		`{"terminal":"a","text":"x","wait":{"wait":"text","text":"y","text":"z"}}`,
	} {
		err := op.Validate([]byte(args))
		if KindOf(err) != KindUsage || !strings.Contains(err.Error(), "duplicate key") {
			t.Errorf("%s: %v, want a usage error naming the duplicate key", args, err)
		}
	}
	if err := op.Validate([]byte(`{"terminal":"a","text":"x","wait":{"wait":"text","text":"y"}}`)); err != nil {
		t.Fatal(err)
	}
}
