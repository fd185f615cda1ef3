package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	dashui "github.com/termsprawl/termsprawl/cli/dash"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// The dashboard in a termsprawl node at 80×24 and at 160×45, driven with
// termsprawl's own tools (issue 39 item 5, CONTRACT §26): whole state
// words and an exited node's code, how long ago for shells, a worktree
// agent whose branch is its name shown once, `?` and `q` in the hints, the
// help whole, and the launch form choosing a kind, taking a command and
// selecting the node it launched.
func TestDashboardSizesE2E(t *testing.T) {
	t.Parallel()
	testenv.LookPath(t, "git", "apt-get install git")
	e := newE2E(t)
	repo := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(repo, 0o755)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "first"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	up, _ := e.up()
	defer e.down(up)
	e.must(e.ts, "new", "--name", "work", "--", "bash", "--norc", "--noprofile")
	failed := strings.TrimSpace(e.must(e.ts, "new", "--name", "failed", "--", "sh", "-c", "read -r x; exit 3"))
	e.must(e.ts, "send", failed, "bye")
	e.waitExited(failed)
	e.must(e.ts, "agent", "custom", "--sandbox", "none", "--name", "alpha", "--cwd", repo, "--worktree", "alpha", "--", "bash", "--norc", "--noprofile")

	for i, sz := range [][2]int{{80, 24}, {160, 45}} {
		w, h := sz[0], sz[1]
		var rec tools.ReceiptOf[tools.NodeInfo]
		e.op("terminal_launch", map[string]any{"name": "dash" + string(rune('a'+i)), "command": []string{e.ts, "dash"}, "columns": w, "rows": h}, &rec)
		d := &dashNode{e: e, id: rec.Result.Terminal}
		s := d.waitText("exited 3")
		lines := strings.Split(s, "\n")
		row := func(name string) string {
			for _, l := range lines {
				if strings.Contains(l, " "+name+" ") {
					return l
				}
			}
			t.Fatalf("%d×%d: no row of %s:\n%s", w, h, name, s)
			return ""
		}
		if r := row("work"); !regexp.MustCompile(`shell +running +\d+[smh] `).MatchString(r + " ") {
			t.Errorf("%d×%d: the shell's row lacks its whole state and how long ago: %q", w, h, r)
		}
		if r := row("failed"); !strings.Contains(r, "exited 3") {
			t.Errorf("%d×%d: the exited node's row lacks its code: %q", w, h, r)
		}
		if r := row("⎇alpha"); strings.Count(r, "alpha") != 1 {
			t.Errorf("%d×%d: alpha's branch repeats its name: %q", w, h, r)
		}
		if last := strings.TrimRight(lines[len(lines)-1], " "); !strings.HasSuffix(last, "? help · q quit") {
			t.Errorf("%d×%d: the hints lose ? or q: %q", w, h, last)
		}
		d.typ("?")
		s = d.waitText(" keys")
		for _, k := range dashui.Keys {
			if !strings.Contains(s, k) {
				t.Errorf("%d×%d: the help is clipped: %q missing:\n%s", w, h, k, s)
			}
		}
		d.typ(" ") // any key closes it
		d.wait("the help closed", func(s string) bool { return !strings.Contains(s, " keys") })

		// The launch form: the kind is chosen (→ claude, ← back to
		// shell), a command is given, and the new node is selected.
		name := "fresh" + string(rune('a'+i))
		d.typ("n")
		d.waitText("kind: shell")
		d.press("Right")
		d.waitText("kind: claude")
		d.press("Left")
		d.waitText("kind: shell")
		d.press("Tab")
		d.typ(name)
		d.press("Enter") // the directory
		d.press("Enter") // the worktree
		d.press("Enter") // the trust setup
		d.press("Enter") // the command
		d.typ("bash --norc --noprofile")
		d.press("Enter")
		d.wait(name+" launched and selected", func(s string) bool {
			for _, l := range strings.Split(s, "\n") {
				if strings.HasPrefix(l, "▌") && strings.Contains(l, name) {
					return true
				}
			}
			return false
		})
		if n, ok := e.listed(name); !ok || strings.Join(n.Command, " ") != "bash --norc --noprofile" {
			t.Errorf("%d×%d: the launched node: %+v", w, h, n)
		}
		d.typ("q")
	}
}
