package ctllite_test

import (
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/ctllite"
	"github.com/termsprawl/termsprawl/tools"
)

var update = flag.Bool("update", false, "rewrite readonly.go from the operation table")

// The lite binary's copy of the read-only operations is the table's.
func TestReadOnlyTable(t *testing.T) {
	t.Parallel()
	var names []string
	for _, op := range tools.Operations() {
		if op.Annotations.ReadOnly {
			names = append(names, op.Name)
		}
		if got := ctllite.ReadOnly(op.Name); got != op.Annotations.ReadOnly && !*update {
			t.Errorf("%s: ReadOnly %v, the table says %v (run go test ./internal/ctllite -run TestReadOnlyTable -update)", op.Name, got, op.Annotations.ReadOnly)
		}
	}
	slices.Sort(names)
	if *update {
		src, err := os.ReadFile("readonly.go")
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`const readOnlyOps = " [^"]*"`)
		out := re.ReplaceAll(src, []byte(`const readOnlyOps = " `+strings.Join(names, " ")+` "`))
		if err := os.WriteFile("readonly.go", out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"", " ", "terminal_list terminal_snapshot", "nope"} {
		if ctllite.ReadOnly(bad) {
			t.Errorf("ReadOnly(%q) is true", bad)
		}
	}
}

// The lite binary's copies of the contract's values are the tools
// package's.
func TestLiteMatchesTools(t *testing.T) {
	if ctllite.MaxStateFileBytes != tools.MaxStateFileBytes || ctllite.MaxBodyBytes != tools.MaxBodyBytes ||
		ctllite.MaxReplyBytes != tools.MaxReplyBytes || ctllite.ClientTimeout != tools.ClientTimeout ||
		ctllite.MaxConversation != tools.MaxNameBytes {
		t.Error("a limit differs from the tools package's")
	}
	if ctllite.SessionEnv != "TERMSPRAWL_SESSION_FILE" {
		t.Errorf("session variable %q", ctllite.SessionEnv)
	}
	for _, k := range ctllite.Kinds {
		if !tools.Kind(k).Valid() {
			t.Errorf("kind %q is not the contract's", k)
		}
	}
	for _, k := range []tools.Kind{tools.KindUsage, tools.KindNotFound, tools.KindUnauthorized, tools.KindForbidden, tools.KindConflict,
		tools.KindTimeout, tools.KindNotRun, tools.KindInProgress, tools.KindRejected, tools.KindUnavailable, tools.KindInternal} {
		if !slices.Contains(ctllite.Kinds, string(k)) {
			t.Errorf("kind %q is missing", k)
		}
	}
	if got, want := ctllite.UnavailableMessage(" refused. "), tools.UnavailableMessage(" refused. "); got != want {
		t.Errorf("unavailable message %q, tools says %q", got, want)
	}
	want := []string{tools.AgentIdle, tools.AgentWorking, tools.AgentWaiting, tools.AgentError}
	if !slices.Equal(ctllite.States, want) || ctllite.CodexIdle != tools.AgentIdle {
		t.Errorf("agent states %q, tools says %q", ctllite.States, want)
	}
	for _, env := range []map[string]string{
		{"TERMSPRAWL_HOME": "rel/dir", "XDG_STATE_HOME": "/x"},
		{"TERMSPRAWL_HOME": "", "XDG_STATE_HOME": "/x"},
		{"TERMSPRAWL_HOME": "", "XDG_STATE_HOME": "relative", "HOME": "/home/u"},
		{"TERMSPRAWL_HOME": "", "XDG_STATE_HOME": "", "HOME": "/home/v"},
	} {
		for k, v := range env {
			t.Setenv(k, v)
		}
		got, gerr := ctllite.StateDir()
		want, werr := tools.StateDir()
		if got != want || (gerr == nil) != (werr == nil) {
			t.Errorf("%v: StateDir %q %v, tools says %q %v", env, got, gerr, want, werr)
		}
	}
}
