package fleetsearch

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/termsprawl/termsprawl/tools"
)

func TestClipAround(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 500) + "NEEDLE" + strings.Repeat("é", 500)
	s := strings.Index(long, "NEEDLE")
	got, cut := clipAround(long, s, s+6)
	if !cut || utf8.RuneCountInString(got) != tools.MaxMatchText || !strings.Contains(got, "NEEDLE") {
		t.Fatalf("clip: %v %d %q", cut, utf8.RuneCountInString(got), got)
	}
	if got, cut := clipAround("short NEEDLE", 6, 12); cut || got != "short NEEDLE" {
		t.Fatalf("short: %q %v", got, cut)
	}
	for _, c := range []struct {
		l    string
		cols int
		want int
	}{{"", 80, 1}, {strings.Repeat("x", 80), 80, 1}, {strings.Repeat("x", 81), 80, 2}, {strings.Repeat("中", 40), 80, 1}, {strings.Repeat("中", 41), 80, 2}, {strings.Repeat("é", 80), 80, 1}} {
		if got := wrappedRows(c.l, c.cols); got != c.want {
			t.Errorf("wrappedRows(%d bytes, %d) = %d, want %d", len(c.l), c.cols, got, c.want)
		}
	}
}
