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
