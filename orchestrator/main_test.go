package orchestrator

import (
	"testing"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

// TestMain runs the package's tests six at a time by default: they are
// independent (private tmux sockets and ssh namespaces, temporary state
// directories) and mostly wait on tmux and the programs they start (six
// took 88 s where four took 103 s, with no more CPU; eight was no faster).
func TestMain(m *testing.M) { testenv.Main(m, 6) }
