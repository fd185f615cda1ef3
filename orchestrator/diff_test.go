package orchestrator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// tmuxView is tmux's own view of a node's pane: rows and cursor.
func tmuxView(t *testing.T, srv *tmuxtest.Server, id string) ([]string, string) {
	t.Helper()
	out := srv.Must("capture-pane", "-p", "-t", "=ts-"+id+":")
	rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for i := range rows {
		rows[i] = strings.TrimRight(rows[i], " ")
	}
	cur := strings.TrimSpace(srv.Must("display-message", "-p", "-t", "=ts-"+id+":", "#{cursor_x} #{cursor_y}"))
	return rows, cur
}

// requireSameAsTmux waits until the node is quiet, then requires the
// mirror's rows and cursor to equal tmux's.
func requireSameAsTmux(t *testing.T, o *Orchestrator, srv *tmuxtest.Server, id, what string) {
	t.Helper()
	if _, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitQuiet, QuietMS: 400, TimeoutMS: 40000}); err != nil {
		t.Fatalf("%s: quiet: %v", what, err)
	}
	snap, err := o.Snapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	rows, cur := tmuxView(t, srv, id)
	got := append([]string(nil), snap.Lines...)
	for len(got) < len(rows) {
		got = append(got, "")
	}
	var diffs []string
	for i := range rows {
		if i >= len(got) || got[i] != rows[i] {
			g := ""
			if i < len(got) {
				g = got[i]
			}
			diffs = append(diffs, fmt.Sprintf("row %d:\n  mirror %q\n  tmux   %q", i, g, rows[i]))
		}
	}
	if len(got) > len(rows) {
		diffs = append(diffs, fmt.Sprintf("mirror has %d rows, tmux %d", len(got), len(rows)))
	}
	if c := fmt.Sprintf("%d %d", snap.Cursor.X, snap.Cursor.Y); c != cur {
		diffs = append(diffs, fmt.Sprintf("cursor: mirror %s tmux %s", c, cur))
	}
	if len(diffs) > 0 {
		t.Fatalf("%s: mirror differs from tmux:\n%s", what, strings.Join(diffs, "\n"))
	}
	// How often the mirror needed tmux's help so far (go test -v shows it).
	n := o.node(id)
	n.Mu.Lock()
	t.Logf("%s: equal to tmux; %d heals, %d reseeds so far", what, n.Healed, n.Reseeds)
	n.Mu.Unlock()
}

func submit(t *testing.T, o *Orchestrator, id, text string) {
	t.Helper()
	if _, err := o.Submit(tctx(t), id, text, nil); err != nil {
		t.Fatal(err)
	}
}

func press(t *testing.T, o *Orchestrator, id, keys string) {
	t.Helper()
	if _, err := o.Press(tctx(t), id, keys, nil); err != nil {
		t.Fatal(err)
	}
}

func TestDifferentialBashColorAndWide(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 4 s on a loaded 2-core machine")
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	id := launch(t, o, bashArgv()...)
	dir := t.TempDir()
	for _, name := range []string{"plain.txt", "日本語.txt", "emoji-🎉.md", "ünïcödé"} {
		os.WriteFile(filepath.Join(dir, name), nil, 0o600)
	}
	os.Mkdir(filepath.Join(dir, "subdir"), 0o700)
	submit(t, o, id, "cd "+dir+" && ls --color=always -la")
	waitText(t, o, id, "subdir")
	requireSameAsTmux(t, o, srv, id, "ls --color")
	submit(t, o, id, "printf 'wide: 漢字テスト 한국어 ｆｕｌｌ\\ncombining: e\\u0301 a\\u0308 n\\u0303\\n'")
	requireSameAsTmux(t, o, srv, id, "wide and combining")
	// A wide character that does not fit in the last column.
	submit(t, o, id, "printf '%079d漢\\n' 0")
	requireSameAsTmux(t, o, srv, id, "wide char at the right edge")
}

func TestDifferentialVim(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 5 s on a loaded 2-core machine")
	t.Parallel()
	need(t, "vim")
	o, srv := newTestOrchestrator(t)
	file := filepath.Join(t.TempDir(), "f.txt")
	var b strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "line %d: the quick brown fox 日本 jumps\n", i)
	}
	os.WriteFile(file, []byte(b.String()), 0o600)
	id := launch(t, o, "vim", "-u", "NONE", "-N", file)
	waitText(t, o, id, "line 0")
	requireSameAsTmux(t, o, srv, id, "vim open")
	press(t, o, id, "5 0 G")
	requireSameAsTmux(t, o, srv, id, "vim jump")
	press(t, o, id, "o")
	if _, err := o.Type(tctx(t), id, "inserted text ✓", nil); err != nil {
		t.Fatal(err)
	}
	press(t, o, id, "Escape")
	requireSameAsTmux(t, o, srv, id, "vim insert")
	press(t, o, id, ": q ! Enter")
	if _, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitExit, TimeoutMS: 10000}); err != nil {
		snap, _ := o.Snapshot(context.Background(), id)
		ps, _ := exec.Command("ps", "-eo", "pid,ppid,stat,cmd").Output()
		t.Fatalf("%v\n%s\n%s\n%s", err, strings.Join(snap.Lines, "\n"), srv.Must("list-panes", "-a", "-F", "#{session_name} #{pane_dead}:#{pane_dead_status}:#{pane_dead_signal} #{pane_pid}"), ps)
	}
	requireSameAsTmux(t, o, srv, id, "after vim exits (alternate screen left)")
}

func TestDifferentialLessAndMan(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 5 s on a loaded 2-core machine")
	t.Parallel()
	need(t, "less", "man")
	o, srv := newTestOrchestrator(t)
	id := launch(t, o, bashArgv()...)
	submit(t, o, id, "seq 1 500 | less")
	waitText(t, o, id, "23")
	requireSameAsTmux(t, o, srv, id, "less")
	press(t, o, id, "Space Space")
	requireSameAsTmux(t, o, srv, id, "less paged")
	press(t, o, id, "q")
	submit(t, o, id, "MANPAGER=less man ls")
	waitText(t, o, id, "NAME")
	requireSameAsTmux(t, o, srv, id, "man")
	press(t, o, id, "q")
	requireSameAsTmux(t, o, srv, id, "after man")
}

func TestDifferentialTop(t *testing.T) {
	t.Parallel()
	need(t, "top")
	o, srv := newTestOrchestrator(t)
	id := launch(t, o, "top", "-d", "60")
	waitText(t, o, id, "PID")
	requireSameAsTmux(t, o, srv, id, "top")
}

func TestDifferentialPythonREPL(t *testing.T) {
	t.Parallel()
	need(t, "python3")
	o, srv := newTestOrchestrator(t)
	id := launch(t, o, "python3", "-q")
	waitText(t, o, id, ">>>")
	submit(t, o, id, "for i in range(30): print(i, '★' * (i % 7))")
	press(t, o, id, "Enter")
	waitText(t, o, id, "29")
	requireSameAsTmux(t, o, srv, id, "python3 REPL")
}

func TestDifferentialFloodAndResize(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 35 s on a loaded 2-core machine")
	t.Parallel()
	o, srv := newTestOrchestrator(t)
	id := launch(t, o, bashArgv()...)
	// Type only once bash is ready: text typed ahead of the prompt is
	// echoed twice (by the tty, then by readline), and the second echo of
	// "echo FLOOD-DONE", wrapped at the space, would satisfy the wait.
	waitText(t, o, id, "bash-")
	// 40 MB of text; the mirror may fall behind and reseed, but once the
	// flood is over it must equal tmux.
	submit(t, o, id, "head -c 30000000 /dev/urandom | base64 | head -c 40000000; echo; echo FLOOD-DONE")
	r, err := o.WaitFor(tctx(t), id, tools.WaitSpec{Wait: tools.WaitRegex, Pattern: `(?m)^FLOOD-DONE`, After: new(uint64), TimeoutMS: 40000})
	if err != nil {
		t.Fatal(err)
	}
	_ = r
	requireSameAsTmux(t, o, srv, id, "after 40 MB flood")
	if _, err := o.Resize(tctx(t), id, 60, 20); err != nil {
		t.Fatal(err)
	}
	requireSameAsTmux(t, o, srv, id, "after resize")
	snap, _ := o.Snapshot(context.Background(), id)
	if snap.Columns != 60 || snap.Rows != 20 {
		t.Fatalf("size after resize = %dx%d", snap.Columns, snap.Rows)
	}
}
