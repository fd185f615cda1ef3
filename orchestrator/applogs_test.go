package orchestrator

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/node"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator/applog"
	"github.com/termsprawl/termsprawl/tools"
)

// launchWithLogs starts a quiet program that follows logs.
func launchWithLogs(t *testing.T, o *Orchestrator, logs ...tools.LogSpec) string {
	t.Helper()
	info, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"sleep", "600"}, Cwd: t.TempDir(), Columns: 80, Rows: 24, Logs: logs})
	if err != nil {
		t.Fatal(err)
	}
	return info.Terminal
}

// logsUntil captures the node's logs since cursor until ok accepts them,
// woken by the follower (never by polling a clock).
func logsUntil(t *testing.T, o *Orchestrator, id string, cursor uint64, ok func(tools.Changes) bool) tools.Changes {
	t.Helper()
	n := o.node(id)
	deadline := time.After(20 * time.Second)
	for {
		changed := n.TW.Logs.Changed()
		ch, err := o.CaptureSince(context.Background(), id, cursor)
		if err != nil {
			t.Fatal(err)
		}
		if ok(ch) {
			return ch
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("logs never satisfied the test; last capture: %+v", ch)
		}
	}
}

func logTexts(ch tools.Changes) []string {
	var out []string
	for _, l := range ch.Logs {
		out = append(out, l.Label+": "+l.Line)
	}
	return out
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func hasLines(want ...string) func(tools.Changes) bool {
	return func(ch tools.Changes) bool { return strings.Join(logTexts(ch), "\n") == strings.Join(want, "\n") }
}

// Logs are followed from their end at launch; capture_since returns the
// lines read after its cursor with label and time, each line once.
func TestAppLogsFollow(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	dir := t.TempDir()
	app, db := filepath.Join(dir, "app.log"), filepath.Join(dir, "db.log")
	os.WriteFile(app, []byte("old line before launch\n"), 0o600)
	os.WriteFile(db, nil, 0o600)
	id := launchWithLogs(t, o, tools.LogSpec{Path: app, Label: "app"}, tools.LogSpec{Path: db})
	caps, _ := o.Capabilities(context.Background(), id)
	if strings.Join(caps.Logs, ",") != "app,db.log" || len(caps.LogsMissing) != 0 {
		t.Fatalf("capabilities logs %v missing %v", caps.Logs, caps.LogsMissing)
	}
	start := node.RevisionBase(o.node(id).Meta.Epoch)
	before := time.Now().UnixMilli()
	appendFile(t, app, "first\nsecond\r\n")
	appendFile(t, db, "half a ")
	appendFile(t, db, "line\n")
	ch := logsUntil(t, o, id, start, hasLines("app: first", "app: second", "db.log: half a line"))
	if ch.Logs[0].MS < before || ch.LogsOmitted == nil || *ch.LogsOmitted != 0 {
		t.Fatalf("capture %+v", ch)
	}
	// The returned revision is a cursor past every returned line.
	again, _ := o.CaptureSince(context.Background(), id, ch.Revision)
	if len(again.Logs) != 0 {
		t.Fatalf("lines returned twice: %v", logTexts(again))
	}
	appendFile(t, app, "third\n")
	logsUntil(t, o, id, ch.Revision, hasLines("app: third"))
	// A line longer than 4096 bytes is cut.
	appendFile(t, app, strings.Repeat("x", 10000)+"\nshort\n")
	ch2 := logsUntil(t, o, id, ch.Revision, func(c tools.Changes) bool { return len(c.Logs) == 3 })
	if l := ch2.Logs[1].Line; len(l) != applog.MaxLineBytes+len("…") || ch2.Logs[2].Line != "short" {
		t.Fatalf("long line %d bytes, then %q", len(l), ch2.Logs[2].Line)
	}
}

// Rotation, truncation and floods are orchestrator/applog's tests: they
// need no node.

// Bad log paths: a missing file is followed once it appears (marked
// missing meanwhile); a directory, a file that cannot be read, a missing
// directory and two equal labels refuse the launch with kind usage.
func TestAppLogsBadPaths(t *testing.T) {
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "app.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	unreadable := filepath.Join(dir, "secret.log")
	os.WriteFile(unreadable, []byte("x\n"), 0o000)
	cases := []struct {
		name string
		logs []tools.LogSpec
		want string
	}{
		{"a directory", []tools.LogSpec{{Path: dir}}, "is a directory"},
		{"a socket", []tools.LogSpec{{Path: sock}}, "not a regular file"},
		{"a missing directory", []tools.LogSpec{{Path: filepath.Join(dir, "nope", "app.log")}}, "does not exist; create it first"},
		{"two equal labels", []tools.LogSpec{{Path: filepath.Join(dir, "a.log"), Label: "x"}, {Path: filepath.Join(dir, "b.log"), Label: "x"}}, `two logs are labelled "x"`},
		// The engine itself refuses termsprawl's own files (a node's
		// session file holds its token), whoever calls Launch.
		{"inside the state dir", []tools.LogSpec{{Path: filepath.Join(o.cfg.StateDir, "sessions", "operator.json")}}, "state dir"},
	}
	if os.Geteuid() != 0 {
		// root reads every file whatever its mode: the socket stands for
		// an unreadable file there.
		cases = append(cases, struct {
			name string
			logs []tools.LogSpec
			want string
		}{"an unreadable file", []tools.LogSpec{{Path: unreadable}}, "cannot be read"})
	}
	for _, tc := range cases {
		_, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"sleep", "600"}, Cwd: dir, Logs: tc.logs})
		if !isKind(err, tools.KindUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want usage containing %q", tc.name, err, tc.want)
		}
	}
	// Logs are files of this machine: a node on another host cannot have them.
	_, err = o.Launch(tctx(t), LaunchSpec{Command: []string{"sleep", "600"}, Host: "elsewhere", Logs: []tools.LogSpec{{Path: "/tmp/x.log"}}})
	if !isKind(err, tools.KindUsage) || !strings.Contains(err.Error(), "this machine only") {
		t.Errorf("logs on another host: %v", err)
	}
	if len(o.List(tctx(t))) != 0 {
		t.Fatal("a refused launch left a node")
	}

	// A file that does not exist yet, given relative to cwd.
	later := filepath.Join(dir, "later.log")
	info, err := o.Launch(tctx(t), LaunchSpec{Command: []string{"sleep", "600"}, Cwd: dir, Logs: []tools.LogSpec{{Path: "later.log", Label: "later"}}})
	if err != nil {
		t.Fatal(err)
	}
	caps, _ := o.Capabilities(context.Background(), info.Terminal)
	if strings.Join(caps.LogsMissing, ",") != "later" {
		t.Fatalf("missing logs %v", caps.LogsMissing)
	}
	cur := node.RevisionBase(o.node(info.Terminal).Meta.Epoch)
	appendFile(t, later, "it exists now\n")
	logsUntil(t, o, info.Terminal, cur, hasLines("later: it exists now"))
	if caps, _ := o.Capabilities(context.Background(), info.Terminal); len(caps.LogsMissing) != 0 {
		t.Fatalf("still missing: %v", caps.LogsMissing)
	}
}

// After an orchestrator restart the adopted node follows its logs again
// (from their end then).
func TestAppLogsAfterRestart(t *testing.T) {
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	dir := o.StateDir()
	p := filepath.Join(t.TempDir(), "app.log")
	os.WriteFile(p, nil, 0o600)
	id := launchWithLogs(t, o, tools.LogSpec{Path: p, Label: "app"})
	o.Close()
	appendFile(t, p, "written while no orchestrator ran\n")
	o2 := openOrchestrator(t, srv, dir)
	caps, err := o2.Capabilities(context.Background(), id)
	if err != nil || strings.Join(caps.Logs, ",") != "app" {
		t.Fatalf("capabilities after restart: %+v %v", caps, err)
	}
	cur := node.RevisionBase(o2.node(id).Meta.Epoch)
	appendFile(t, p, "after the restart\n")
	logsUntil(t, o2, id, cur, hasLines("app: after the restart"))
}

// A node with logs always has logs and logs_omitted in its captures; a
// node without has neither.
func TestAppLogsFieldsPresent(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 4 s on a loaded 2-core machine")
	t.Parallel()
	o, _ := newTestOrchestrator(t)
	p := filepath.Join(t.TempDir(), "app.log")
	with := launchWithLogs(t, o, tools.LogSpec{Path: p})
	without := launch(t, o, "sleep", "600")
	for id, want := range map[string]bool{with: true, without: false} {
		ch, err := o.CaptureSince(context.Background(), id, node.RevisionBase(o.node(id).Meta.Epoch))
		if err != nil {
			t.Fatal(err)
		}
		b := mustJSON(t, ch)
		if strings.Contains(b, `"logs":[]`) != want || strings.Contains(b, `"logs_omitted":0`) != want {
			t.Errorf("%s: %s", id, b)
		}
	}
}
