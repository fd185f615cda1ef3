package tools

import (
	"encoding/json"
	"errors"
	"testing"
)

// An intent a killed orchestrator left is answered finally by the next
// run of the store: as Settle recorded it, else as an interrupted
// conflict — never in_progress for ever.
func TestReceiptIntentOfAnotherRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old, err := OpenReceiptStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"terminal":"a","text":"ls"}`)
	for _, k := range []string{"k1", "k2", "k3", "k4"} {
		if err := old.putIntent("c", k, "terminal_submit", args); err != nil {
			t.Fatal(err)
		}
	}
	kindOf := func(err error) Kind {
		var e *Error
		if errors.As(err, &e) {
			return e.Kind
		}
		return ""
	}
	// Its own run: still under way as far as it knows.
	if _, _, err := old.Lookup("c", "k1", "terminal_submit", args); kindOf(err) != KindInProgress {
		t.Fatalf("same run: %v, want in_progress", err)
	}
	s, err := OpenReceiptStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Lookup("c", "k1", "terminal_submit", args); kindOf(err) != KindConflict {
		t.Fatalf("unsettled intent of another run: %v, want a final conflict", err)
	}
	if err := s.Settle("c", "k2", "terminal_submit", nil, Errorf(KindNotRun, "cleared").WithDetails("interrupted", "cleared")); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Lookup("c", "k2", "terminal_submit", args)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindNotRun || e.Details["interrupted"] != "cleared" {
		t.Fatalf("settled failure: %v", err)
	}
	if _, _, err := s.Lookup("c", "k2", "terminal_submit", json.RawMessage(`{"terminal":"a","text":"rm"}`)); kindOf(err) != KindConflict {
		t.Fatalf("settled key with other args: %v, want conflict", err)
	}
	if err := s.Settle("c", "k3", "terminal_submit", json.RawMessage(`{"action":"terminal_submit"}`), nil); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := s.Lookup("c", "k3", "terminal_submit", args); err != nil || !ok || string(r) != `{"action":"terminal_submit"}` {
		t.Fatalf("settled receipt: %s %v %v", r, ok, err)
	}
	if err := s.DropInterrupted("c", "k4", "terminal_submit"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Lookup("c", "k4", "terminal_submit", args); ok || err != nil {
		t.Fatalf("dropped intent: %v %v, want nothing stored", ok, err)
	}
	// A settled or current-run key is never overwritten.
	if err := s.Settle("c", "k3", "terminal_submit", nil, Errorf(KindNotRun, "x")); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Lookup("c", "k3", "terminal_submit", args); !ok {
		t.Fatal("Settle overwrote a stored receipt")
	}
}
