package toolserver

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// TestMain runs the package's tests eight at a time by default: they are
// independent (private tmux sockets, temporary state directories) and
// mostly wait on tmux and the programs they start. git, in the tests and
// in the engine they run, reads one configuration file made here
// (GIT_CONFIG_GLOBAL, no system file), never the user's: the worktree
// tests can then run side by side, with no HOME of their own.
func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "termsprawl-toolserver-git-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		testGitConfig = filepath.Join(dir, "gitconfig")
		if err := os.WriteFile(testGitConfig, []byte("[user]\n\tname = Test\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Setenv("GIT_CONFIG_GLOBAL", testGitConfig)
		os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
		return testenv.Run(m, 8)
	}())
}

// testGitConfig is the package's git configuration file (TestMain).
var testGitConfig string
