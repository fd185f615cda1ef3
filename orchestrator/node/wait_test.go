package node

import (
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/proc"
	"github.com/termsprawl/termsprawl/tools"
)

func TestCompileWait(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		spec tools.WaitSpec
		ok   bool
	}{
		{tools.WaitSpec{Wait: tools.WaitText, Text: "x"}, true},
		{tools.WaitSpec{Wait: tools.WaitText}, false},
		{tools.WaitSpec{Wait: tools.WaitRegex, Pattern: "a+"}, true},
		{tools.WaitSpec{Wait: tools.WaitRegex, Pattern: "("}, false},
		{tools.WaitSpec{Wait: tools.WaitQuiet}, true},
		{tools.WaitSpec{Wait: "sometime"}, false},
		{tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 40001}, false},
		{tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 40000}, true},
	} {
		if _, err := CompileWait(tt.spec); (err == nil) != tt.ok {
			t.Errorf("compileWait(%+v) = %v, want ok=%v", tt.spec, err, tt.ok)
		}
	}
}

func TestParseSeed(t *testing.T) {
	t.Parallel()
	st, dead, code, pid, err := parseSeed("80 24 10 3 1 1 1 010 1 0 23 4294967295 4294967295 1:7: 1234 my title here", proc.ZombieStatus)
	if err != nil {
		t.Fatal(err)
	}
	if st.Columns != 80 || st.Rows != 24 || st.CursorX != 10 || st.CursorY != 3 || !st.CursorVisible || !st.AltScreen ||
		!st.AppCursor || !st.Mouse || !st.MouseSGR || st.ScrollBottom != 23 || st.PrimaryCursorX != 0 ||
		!dead || code != 7 || pid != 1234 || st.Title != "my title here" {
		t.Fatalf("parseSeed = %+v dead=%v code=%d pid=%d", st, dead, code, pid)
	}
	if _, _, _, _, err := parseSeed("80 24", proc.ZombieStatus); err == nil {
		t.Fatal("short line accepted")
	}
	if _, _, _, _, err := parseSeed("x 24 10 3 1 1 1 010 1 0 23 0 0 0:: 1 t", proc.ZombieStatus); err == nil {
		t.Fatal("non-numeric width accepted")
	}
}
