package policy

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestAuditAppendReadRotate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, err := OpenAudit(dir, 600)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	base := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	for i := range 20 {
		node := "a"
		if i%2 == 1 {
			node = "b"
		}
		if err := a.Append(Entry{Time: base.Add(time.Duration(i) * time.Minute), Node: node, Tool: "Bash", Input: fmt.Sprintf(`{"command":"echo %d"}`, i), Decision: "allow", By: ByRule, Rule: "Bash(echo:*)", Scope: "fleet", Why: "allow rule"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(a.Path() + ".1"); err != nil {
		t.Fatalf("not rotated at 600 bytes: %v", err)
	}
	if st, _ := os.Stat(a.Path()); st.Size() > 600 {
		t.Fatalf("audit.jsonl is %d bytes, over the 600 limit", st.Size())
	}
	all, skipped, err := ReadAudit(dir, Filter{})
	if err != nil || skipped != 0 {
		t.Fatal(err, skipped)
	}
	// Rotation keeps AuditKeep files: the newest entries survive, in order.
	if len(all) == 0 || !strings.Contains(all[len(all)-1].Input, "echo 19") {
		t.Fatalf("last entry %+v", all[len(all)-1])
	}
	for i := 1; i < len(all); i++ {
		if all[i].Time.Before(all[i-1].Time) {
			t.Fatalf("out of order at %d", i)
		}
	}
	b, _, _ := ReadAudit(dir, Filter{Node: "b", Since: base.Add(15 * time.Minute)})
	if len(b) != 3 || b[0].Node != "b" {
		t.Fatalf("filter: %+v", b)
	}
	last, _, _ := ReadAudit(dir, Filter{Limit: 3})
	if len(last) != 3 || !strings.Contains(last[2].Input, "echo 19") {
		t.Fatalf("limit: %+v", last)
	}
	// Append-only: the file is opened O_APPEND, so a line lands at the
	// end even when someone moved the offset.
	st, _ := os.Stat(a.Path())
	if err := a.Append(Entry{Node: "c", Decision: "deny", By: ByHuman, Surface: "cli", Why: "no"}); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(a.Path())
	if st2.Size() <= st.Size() && st2.Size() > 600 {
		t.Fatal("did not grow")
	}
}

func TestAuditSkipsGarbage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/"+AuditFile, []byte("not json\n{\"decision\":\"allow\",\"node\":\"x\",\"by\":\"rule\",\"why\":\"w\"}\n{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, skipped, err := ReadAudit(dir, Filter{})
	if err != nil || len(e) != 1 || skipped != 2 {
		t.Fatalf("%v %d %v", e, skipped, err)
	}
}

// TestAuditSurvivesKill9: a process killed with SIGKILL right after a
// decision was appended leaves the line on disk.
func TestAuditSurvivesKill9(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv("TERMSPRAWL_AUDIT_CHILD"); dir != "" {
		a, err := OpenAudit(dir, 0)
		if err != nil {
			os.Exit(3)
		}
		a.testAfterAppend = func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
		_ = a.Append(Entry{Node: "n1", Kind: "claude", Tool: "Bash", Input: `{"command":"git status"}`, Decision: "allow", By: ByRule, Rule: "Bash(git status)", Scope: "fleet", Why: "allow rule Bash(git status) (fleet)"})
		os.Exit(4) // not reached
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAuditSurvivesKill9$")
	cmd.Env = append(os.Environ(), "TERMSPRAWL_AUDIT_CHILD="+dir)
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed by SIGKILL: %v", err)
	}
	e, _, err := ReadAudit(dir, Filter{})
	if err != nil || len(e) != 1 || e[0].Rule != "Bash(git status)" || e[0].Input != `{"command":"git status"}` {
		t.Fatalf("after kill -9: %+v %v", e, err)
	}
}
