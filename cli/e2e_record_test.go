package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/tools"
)

// A recording goes on after `termsprawl up` was killed with SIGKILL: the
// restarted orchestrator repairs the cast, records a gap and a frame, and
// the output after the restart; asciinema reads the result.
func TestE2ERecordingSurvivesKill9(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	up, _ := e.up()
	id := e.launchShell()
	out := e.must(e.ts, "record", id)
	m := regexp.MustCompile(`into (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("termsprawl record printed %q", out)
	}
	dir := m[1]
	op := tools.SessionPath(e.state, tools.OperatorNode)
	e.submit(op, id, "echo before-$((20+22))", "before-42")
	if err := up.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !up.waitExit(15 * time.Second) {
		t.Fatal("termsprawl up survived SIGKILL")
	}
	up, _ = e.up()
	e.submit(op, id, "echo after-$((20+28))", "after-48")
	e.must(e.ts, "record", "--off", id)
	e.down(up)

	tr, err := record.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ov := tr.Overview()
	if len(ov.Gaps) != 1 || tr.Meta().Resumes != 1 {
		t.Fatalf("after a SIGKILL: gaps %+v, resumes %d (want one of each)", ov.Gaps, tr.Meta().Resumes)
	}
	s, _, err := tr.FrameAt(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Lines, "\n"); !strings.Contains(got, "before-42") || !strings.Contains(got, "after-48") {
		t.Fatalf("the last frame:\n%s", got)
	}
	cat, err := testenv.AsciinemaCat(t, filepath.Join(dir, record.CastFile))
	if err != nil || !strings.Contains(cat, "after-48") {
		t.Fatalf("asciinema cat: %v\n%s", err, cat)
	}
}
