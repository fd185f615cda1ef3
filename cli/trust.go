package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/termsprawl/termsprawl/orchestrator/trust"
	"github.com/termsprawl/termsprawl/tools"
)

// `termsprawl trust DIR` and `termsprawl worktree trust DIR`: the human
// approves a repository's .termsprawl/ files at their current content
// (CONTRACT §26). It is the human's alone (this command, --trust-setup,
// the dashboard's launch form): no operation writes trust.json, so an
// agent's launch never approves.

type trustCmd struct {
	Dir string `arg:"" name:"DIR" predictor:"dir" help:"The repository (any directory in it; a linked worktree counts as its repository)."`
}

func (trustCmd) Examples() string {
	return `termsprawl trust .                         # approve ./.termsprawl/worktree.json and policy.toml as they are now
termsprawl worktree trust ~/src/app        # the same`
}

// worktreeGroupCmd is `termsprawl worktree …`.
type worktreeGroupCmd struct {
	Trust trustCmd `cmd:"" help:"Approve the repository's .termsprawl/ files (worktree.json's setup, policy.toml) at their current content, as termsprawl trust does."`
}

// repoRootOf is the main worktree of the repository holding dir (dir
// itself when git does not know it).
func repoRootOf(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	out, err := exec.Command("git", "-C", abs, "rev-parse", "--path-format=absolute", "--git-common-dir").Output()
	if err != nil {
		return abs
	}
	common := strings.TrimSpace(string(out))
	if filepath.Base(common) == ".git" {
		return filepath.Dir(common)
	}
	if out, err := exec.Command("git", "-C", abs, "rev-parse", "--show-toplevel").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	return abs
}

// approveRepo approves the .termsprawl/ files of dir's repository at
// their current content (the human's act: the CLI's trust and
// --trust-setup, the dashboard's launch form). Its error is in the
// human's words, outside text made visible.
func (h *human) approveRepo(dir string) (root string, got []trust.Approved, err error) {
	root = repoRootOf(dir)
	if err := os.MkdirAll(h.stateDir, 0o700); err != nil {
		return root, nil, err
	}
	got, err = trust.Open(h.stateDir).Approve(root)
	switch {
	case errors.Is(err, trust.ErrNothing):
		return root, nil, fmt.Errorf("%s has no %s/%s nor %s/%s: nothing to approve (give the directory of the repository that has them)",
			vis(root), trust.Dir, trust.WorktreeFile, trust.Dir, trust.PolicyFile)
	case err != nil:
		return root, nil, errors.New(tools.VisibleLine(err.Error()))
	}
	return root, got, nil
}

// approve approves the repository holding dir and prints what it
// approved, with hashes, to out; the exit code.
func (h *human) approve(dir string, out io.Writer) int {
	if code, refused := h.refuseInNode("approving a repository's setup and policy (termsprawl trust, --trust-setup)"); refused {
		return code
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		fmt.Fprintf(h.stderr, "%s: %s is not a directory: give the repository's directory (termsprawl trust DIR)\n", h.prefix(), vis(dir))
		return ExitUsage
	}
	root, got, err := h.approveRepo(dir)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: %s\n", h.prefix(), err)
		return ExitNo
	}
	fmt.Fprintf(out, "approved for %s, at their current content:\n", vis(root))
	for _, a := range got {
		fmt.Fprintf(out, "  %s/%s  %s\n", trust.Dir, a.Name, a.Hash)
		if b, err := trust.ReadFile(root, a.Name); err == nil {
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			if len(lines) > 20 {
				lines = append(lines[:20], fmt.Sprintf("… %d more lines (%s)", len(lines)-20, vis(a.Path)))
			}
			for _, l := range lines {
				fmt.Fprintf(out, "    | %s\n", vis(l))
			}
		}
	}
	fmt.Fprintf(out, "a changed file counts only once approved again: termsprawl trust %s\n", shellQuoteArg(root))
	return ExitOK
}
