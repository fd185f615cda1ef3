package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/tools"
)

// The dashboard's worktree parts end to end, in a real git repository
// with its own HOME: the launch form refuses a bad branch name in the
// form, then launches a node in a worktree; its row shows the branch, the
// preview its dirty state, and the diff tab the edited file.
func TestDashboardWorktreeE2E(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	repo, _, _ := e2eRepo(t, e)
	e.up()

	var rec tools.ReceiptOf[tools.NodeInfo]
	e.op("terminal_launch", map[string]any{"name": "dash", "command": []string{e.ts, "dash"}, "columns": 150, "rows": 40}, &rec)
	d := &dashNode{e: e, id: rec.Result.Terminal}
	d.waitText("1 node · 0 need you")

	// n: a shell named fixer in the repository, on a bad branch name.
	d.typ("n")
	d.waitText("kind: shell")
	d.press("Tab")
	d.typ("fixer")
	d.press("Tab")
	d.typ(repo)
	d.press("Tab")
	d.typ("a..b")
	d.press("Enter") // to the trust field (empty: no approval)
	d.press("Enter") // to the command (empty: the shell)
	d.press("Enter")
	d.waitText("launch refused")
	d.waitText("not a valid branch name")
	if _, ok := e.listed("fixer"); ok {
		t.Fatal("a refused launch made a node")
	}
	// The form stays open on the command field: back to the worktree,
	// fix it, launch.
	d.press("BTab")
	d.press("BTab")
	d.press("C-e")
	d.press("C-u")
	d.typ("feat")
	d.press("Enter")
	d.press("Enter")
	d.press("Enter")
	var fixer tools.NodeInfo
	if !testenv.Until(30*time.Second, func() bool {
		if n, ok := e.listed("fixer"); ok && n.Worktree != nil {
			fixer = n
			return true
		}
		return false
	}) {
		t.Fatalf("no fixer in a worktree; dashboard:\n%s", d.screen())
	}
	if fixer.Worktree.Branch != "termsprawl/feat" {
		t.Fatalf("fixer's worktree: %+v", fixer.Worktree)
	}
	d.waitText("⎇feat")                    // the row's branch
	d.waitText("⎇ termsprawl/feat · from") // the preview's worktree line: fixer is selected

	// An edit in the worktree: the preview says dirty, the diff tab shows it.
	os.WriteFile(filepath.Join(fixer.Worktree.Path, "README"), []byte("one\nTWO-EDITED\n"), 0o644)
	d.waitText("dirty")
	d.press("BTab") // screen → diff, the last tab
	s := d.wait("the edited file in the diff tab", func(s string) bool {
		return strings.Contains(s, "+++ b/README") && strings.Contains(s, "+TWO-EDITED") && strings.Contains(s, "-two")
	})
	if !strings.Contains(s, "1 file changed, +1 -1 against main (") {
		t.Fatalf("the diff tab has no stat:\n%s", s)
	}
	// A node without a worktree says so.
	d.typ("k")
	d.waitText("dash has no worktree")
	d.typ("q")
}
