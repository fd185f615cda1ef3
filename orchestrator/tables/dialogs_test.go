package tables

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

var (
	testAgent    = tools.Identity{Node: "n1", Role: tools.RoleAgent, Incarnation: "n1-life"}
	testOperator = tools.Identity{Node: "operator", Role: tools.RoleOperator, Incarnation: "operator"}
)

func testStore(t *testing.T) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	return NewStore(dir, slog.New(slog.NewTextHandler(io.Discard, nil))), dir
}

// A dialog is seen (listed, answerable) only once its id is on disk.
func TestDialogOpensOnDisk(t *testing.T) {
	t.Parallel()
	st, dir := testStore(t)
	tab := NewDialogs(st, DialogHooks{})
	defer tab.Persister().Close()
	g := gate(tab.Persister())
	type opened struct {
		d   *Dialog
		err error
	}
	done := make(chan opened, 1)
	go func() {
		d, _, err := tab.Open(context.Background(), testAgent, DialogRequest{Kind: "permission", Title: "Bash: make", TimeoutMS: 60000}, false)
		done <- opened{d, err}
	}()
	<-g.entered // its write is blocked: nobody sees it yet
	if l := tab.List(); len(l) != 0 {
		t.Fatalf("a dialog not on disk is listed: %+v", l)
	}
	tab.mu.Lock()
	var id string
	for k := range tab.opening {
		id = k
	}
	tab.mu.Unlock()
	if _, _, err := tab.Answer(testOperator, DialogAnswer{Dialog: id, Mode: tools.AnswerAllow}); tools.KindOf(err) != tools.KindNotFound {
		t.Fatalf("an answer to dialog %q not on disk: %v, want not_found", id, err)
	}
	close(g.release)
	r := <-done
	if r.err != nil || r.d.ID != id {
		t.Fatalf("open: %+v %v, want %s", r.d, r.err, id)
	}
	raw, err := os.ReadFile(filepath.Join(dir, Dir, DialogsFile))
	if err != nil {
		t.Fatal(err)
	}
	var d dialogsOnDisk
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Dialogs) != 1 || d.Dialogs[0].ID != id || d.Next < idNumber(id) {
		t.Fatalf("dialogs.json when %s opened: %s", id, raw)
	}
	if l := tab.List(); len(l) != 1 || l[0].ID != id {
		t.Fatalf("open dialogs: %+v", l)
	}
}

// dialogs.json as the tool server wrote it before the table had a
// package of its own loads, and is written back byte for byte; a dead
// incarnation's dialogs and "always" answers are dropped.
func TestDialogsFileFromAnOlderVersion(t *testing.T) {
	t.Parallel()
	const old = `{
  "next": 7,
  "dialogs": [
    {
      "dialog": "dialog-6",
      "node": "n1",
      "kind": "permission",
      "title": "Bash: ls",
      "tool": "Bash",
      "input": "{\"command\":\"ls\"}",
      "created": "2026-12-01T10:00:00Z",
      "expires": "2126-12-01T10:10:00Z",
      "incarnation": "n1-life"
    },
    {
      "dialog": "dialog-7",
      "node": "n1",
      "kind": "question",
      "title": "which?",
      "options": [
        "a",
        "b"
      ],
      "created": "2126-12-01T10:01:00Z",
      "expires": "2126-12-01T10:11:00Z",
      "incarnation": "n1-life",
      "outcome": {
        "dialog": "dialog-7",
        "answer": {
          "mode": "allow",
          "selection": "a",
          "reason": "allowed by the human in termsprawl"
        },
        "kind": "question",
        "decided_by": "human",
        "surface": "cli"
      },
      "ended": "2126-12-01T10:02:00Z"
    },
    {
      "dialog": "dialog-5",
      "node": "gone",
      "kind": "permission",
      "title": "x",
      "created": "2026-12-01T09:00:00Z",
      "expires": "2126-12-01T09:10:00Z",
      "incarnation": "gone-life"
    }
  ],
  "always": [
    "gone-life\u0000permission\u0000title\u0000x",
    "n1-life\u0000permission\u0000tool\u0000Bash\u0000{\"command\":\"pwd\"}"
  ]
}
`
	st, dir := testStore(t)
	path := filepath.Join(dir, Dir, DialogsFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	tab := NewDialogs(st, DialogHooks{})
	defer tab.Persister().Close()
	if err := tab.Restore(st, map[string]bool{testAgent.Incarnation: true}); err != nil {
		t.Fatal(err)
	}
	if l := tab.List(); len(l) != 1 || l[0].ID != "dialog-6" || l[0].Input != `{"command":"ls"}` {
		t.Fatalf("open dialogs after restore: %+v", l)
	}
	got, err := tab.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var want dialogsOnDisk
	if err := json.Unmarshal([]byte(old), &want); err != nil {
		t.Fatal(err)
	}
	want.Dialogs = want.Dialogs[:2] // dialog-5's node is gone
	want.Always = want.Always[1:]
	wantRaw, err := Marshal(DialogsFile, want)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(wantRaw) {
		t.Fatalf("written back:\n%s\nwant:\n%s", got, wantRaw)
	}
	// The same bytes as the old file, less the dead incarnation's lines.
	if full, _ := Marshal(DialogsFile, mustDecode(t, old)); string(full) != old {
		t.Fatalf("the old file does not round-trip byte for byte:\n%s", full)
	}
	// Ids go on above every id on disk.
	d, _, err := tab.Open(context.Background(), testAgent, DialogRequest{Kind: "permission", Title: "Bash: make"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != "dialog-8" {
		t.Fatalf("the next id after a restore: %s, want dialog-8", d.ID)
	}
	// An "always" answer restored still answers.
	if _, remembered, err := tab.Open(context.Background(), testAgent, DialogRequest{Kind: "permission", Tool: "Bash", Input: `{"command":"pwd"}`}, false); err != nil || !remembered {
		t.Fatalf("a restored always answer: remembered %v, %v", remembered, err)
	}
}

func mustDecode(t *testing.T, s string) dialogsOnDisk {
	t.Helper()
	var d dialogsOnDisk
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		t.Fatal(err)
	}
	return d
}
